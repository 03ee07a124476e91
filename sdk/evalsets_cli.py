"""``layersched evalset register``: evaluation sets registered with the service where their keys are.

A set's file holds the secret keys of its hidden episodes, so it lives on the hosts that run the simulator (a worker
host or container), never on the API's. This command runs there, with the worker's settings (the database in
``LAYERSCHED_DATABASE_URL``): it reads each file, registers it (name, track, commitment, public scenario summary) and
scores the track's baselines on it once, as the board's reference rows. The same file again changes nothing; a
changed file under a registered name is refused, naming both commitments. ``layersched serve`` registers its sets
with the same code. Needs the ``server`` extra.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from layersched.sdk.commands import AddCommand
from layersched.sdk.errors import ConfigError, LayerschedError


def add_register_parser(actions: Any, add: AddCommand) -> None:
    """``evalset register`` (beside ``evalset verify``)."""
    p = add(
        actions,
        "register",
        cmd_register,
        "register evaluation-set files with the service (on a worker host)",
        "Register each FILE (or built-in set: sample, jobs-sample, workflows-sample) with the service's database\n"
        "and score its track's baselines on it, as the board's reference rows. Run it where the files (their\n"
        "secret keys) are, a worker host or container, with the worker's settings (LAYERSCHED_DATABASE_URL);\n"
        "the API never reads them, and workers read each set from the path registered here, so keep the files\n"
        "at the same path on every worker host. Prints each set's name, track and commitment. The same file\n"
        "again changes nothing; a changed file under a registered name is refused (a registered set never\n"
        "changes: name the new one otherwise). Phases then use the sets by name (admin challenge apply, admin\n"
        "phase create --evalset NAME). Needs the server extra.",
        "  layersched evalset register hidden_seeds/private/spring.toml sample jobs-sample\n"
        "  docker compose run --rm worker layersched evalset register /srv/evalsets/spring.toml sample\n"
        "  layersched evalset register hidden_seeds/private/spring.toml --current   # a one-set server's phase main\n",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="evaluation-set files or built-in set names")
    p.add_argument(
        "--current",
        action="store_true",
        help="make the (one) set current: the default phase `main` scores on it (a server without phases)",
    )


def cmd_register(args: argparse.Namespace) -> int:
    try:
        from layersched.worker.evalsets import progress_for, register_sets, registration_line
    except ImportError as exc:
        raise ConfigError(
            f"layersched evalset register needs the server extra (missing module {exc.name!r}): "
            "pip install 'layersched[server]'"
        ) from None
    from sqlalchemy.exc import SQLAlchemyError

    from layersched.server.config import get_settings
    from layersched.server.db import display_url
    from layersched.server.errors import ServiceError
    from layersched.sim.evalset import evalset_file
    from layersched.sim.ordered_pool import available_cores

    paths = [evalset_file(name) for name in args.files]  # EvalSetError (a SimError) names a missing one
    settings = get_settings()
    shown = display_url(settings.database_url)
    # Like a worker, it never migrates (the API's host does: `alembic upgrade head`, compose's migrate step).
    print(f"layersched: database {shown}", file=sys.stderr, flush=True)
    cores = available_cores()
    try:
        registered = register_sets(
            paths, settings=settings, current=args.current, workers=cores, progress=progress_for(cores, sys.stderr)
        )
    except ServiceError as exc:
        raise LayerschedError(f"{exc.message}; nothing was registered") from None
    except SQLAlchemyError as exc:
        reason = getattr(exc, "orig", None) or exc
        raise LayerschedError(
            f"the database {shown} refused the registration ({str(reason).splitlines()[0]}); is its schema up to "
            "date (alembic upgrade head, or compose's migrate step)?"
        ) from None
    for registration in registered:
        print(registration_line(registration))
    return 0
