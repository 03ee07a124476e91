"""Alembic environment: the URL comes from Settings (or ``config.attributes["database_url"]``), not alembic.ini."""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context
from sqlalchemy import Connection

from layersched.server.config import get_settings
from layersched.server.db import make_engine
from layersched.server.models import Base, UTCDateTime

config = context.config
if config.config_file_name is not None and config.attributes.get("configure_logger", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = Base.metadata


def _url() -> str:
    return str(config.attributes.get("database_url") or get_settings().database_url)


def _render_item(type_: str, obj: object, autogen_context: object) -> str | bool:
    # Migrations must not import the models (they change; a revision must not): render the plain column type.
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def _configure(**kwargs: object) -> None:
    context.configure(
        target_metadata=target_metadata,
        compare_type=True,
        render_item=_render_item,
        # SQLite cannot ALTER most things in place; batch mode copies the table instead.
        render_as_batch=True,
        **kwargs,  # type: ignore[arg-type]
    )


def run_migrations_offline() -> None:
    _configure(url=_url(), literal_binds=True, dialect_opts={"paramstyle": "named"})
    with context.begin_transaction():
        context.run_migrations()


def _run(connection: Connection) -> None:
    _configure(connection=connection)
    with context.begin_transaction():
        context.run_migrations()


def _run_sqlite(connection: Connection) -> None:
    """Migrate with foreign keys unenforced, then check them all.

    Batch mode rebuilds a table by copying it and dropping the original: with foreign keys enforced, dropping
    ``submissions`` so deleted every evaluation (ON DELETE CASCADE). SQLite ignores the pragma inside a transaction,
    so it is set before the migrations' transaction begins; the check afterwards refuses a migration that broke a
    reference instead of leaving it behind.
    """
    connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
    connection.commit()
    try:
        _run(connection)
        broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
        if broken:
            raise RuntimeError(f"the migration left rows whose foreign keys point nowhere: {broken[:5]}")
    finally:
        connection.rollback()
        connection.exec_driver_sql("PRAGMA foreign_keys=ON")
        connection.commit()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(_url())
    try:
        with engine.connect() as conn:
            (_run_sqlite if conn.dialect.name == "sqlite" else _run)(conn)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
