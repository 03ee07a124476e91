"""``layersched admin user add --bootstrap``: the first organiser, written into the server's database directly.

Which database: ``LAYERSCHED_DATABASE_URL`` (environment or ``.env``) when set, otherwise the one ``layersched serve
--data-dir DIR`` uses (``DIR/layersched.db``, DIR ``./var`` by default): the same rule as serve, so the README's order
(bootstrap, then serve) meets one database. The database is named on stderr before anything is written, and its
schema is brought up to date first (``alembic upgrade head``, as serve does at start), so a fresh host needs no
other step. Needs the ``server`` extra; imported only for --bootstrap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from layersched.sdk.errors import ConfigError, LayerschedError

# The seam: the server-side ``upgrade_database(*, settings)`` and ``add_user(*, name, email, role, settings) ->
# CreatedUser`` (``.id``, ``.token``). Imported by name, so the SDK never needs the server's dependencies otherwise.
BOOTSTRAP_MODULE = "layersched.server.admin"
BOOTSTRAP_FUNCTION = "add_user"
DEFAULT_DATA_DIR = Path("var")  # `layersched serve`'s default --data-dir


def bootstrap_user(
    *, name: str, email: str, role: str, data_dir: Path | None, say: Callable[[str], None]
) -> tuple[int, str]:
    """Create the user in the server's database (schema upgraded first); returns its id and its first token."""
    try:
        module = importlib.import_module(BOOTSTRAP_MODULE)
        create = getattr(module, BOOTSTRAP_FUNCTION)
        upgrade = module.upgrade_database
    except (ImportError, AttributeError):
        raise ConfigError(
            f"--bootstrap needs the server installed (pip install 'layersched[server]') and "
            f"{BOOTSTRAP_MODULE}.{BOOTSTRAP_FUNCTION}; without it, use an organiser token and drop --bootstrap"
        ) from None
    from alembic.util import CommandError
    from sqlalchemy.exc import SQLAlchemyError

    from layersched.server.db import display_url
    from layersched.server.errors import ServiceError

    settings, source = _settings(data_dir)
    shown = display_url(settings.database_url)
    say(f"database: {shown} ({source})")
    try:
        upgrade(settings=settings)
    except (SQLAlchemyError, CommandError, OSError) as exc:
        raise LayerschedError(f"cannot bring the database {shown} up to date: {_reason(exc)}") from None
    say("database schema up to date (alembic upgrade head)")
    try:
        created = create(name=name, email=email, role=role, settings=settings)
    except ServiceError as exc:
        raise LayerschedError(exc.message) from None
    except SQLAlchemyError as exc:
        raise LayerschedError(f"the database {shown} refused the new user: {_reason(exc)}") from None
    return int(created.id), str(created.token)


def _settings(data_dir: Path | None) -> tuple[Any, str]:
    """The server's settings with the database this command means, and where that choice came from (for the line
    that names it)."""
    from layersched.server.config import get_settings
    from layersched.worker.serve import embedded_environment

    settings = get_settings()
    explicit = "database_url" in settings.model_fields_set
    if explicit and data_dir is None:
        return settings, "from LAYERSCHED_DATABASE_URL"
    url = embedded_environment(data_dir or DEFAULT_DATA_DIR)["LAYERSCHED_DATABASE_URL"]
    if explicit and settings.database_url != url:
        from layersched.server.db import display_url

        raise ConfigError(
            f"LAYERSCHED_DATABASE_URL ({display_url(settings.database_url)}) and --data-dir {data_dir} name two "
            "databases; give one of them"
        )
    if data_dir is None:
        source = (
            "the default: `layersched serve`'s ./var in this folder; choose with --data-dir DIR or "
            "LAYERSCHED_DATABASE_URL"
        )
    else:
        source = f"--data-dir {data_dir}, as `layersched serve --data-dir {data_dir}` uses"
    return settings.model_copy(update={"database_url": url}), source


def _reason(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    return str(orig if orig is not None else exc) or type(exc).__name__
