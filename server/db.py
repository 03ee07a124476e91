"""Engine and sessions. SQLite (the embedded default) gets foreign keys and a busy timeout; Postgres is used as is."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import NullPool


def make_engine(database_url: str) -> Engine:
    """An engine for ``database_url``; creates the directory of a file-backed SQLite database."""
    url = make_url(database_url)
    kwargs: dict[str, Any] = {"pool_pre_ping": True}
    if url.get_backend_name() == "sqlite":
        # The API, the worker and the reconciler share one file: wait for locks instead of failing at once.
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        if url.database and url.database != ":memory:":
            Path(url.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, **kwargs)
    if url.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def make_probe_engine(database_url: str, *, timeout_s: float) -> Engine:
    """An engine for ``/healthz``'s probe: a new connection per probe, which gives up after ``timeout_s`` connecting
    (PostgreSQL's ``connect_timeout``: whole seconds, at least 2, as libpq counts them) and answering (its
    ``statement_timeout``; SQLite's busy timeout). Not the app's pool: checking out a pooled connection pings it with
    no time limit, so a database that stalled after connecting would hold the probe for ever."""
    url = make_url(database_url)
    connect_args: dict[str, Any] = {}
    if url.get_backend_name() == "sqlite":
        connect_args = {"check_same_thread": False, "timeout": timeout_s}
    elif url.get_backend_name() == "postgresql":
        connect_args = {
            "connect_timeout": max(2, math.ceil(timeout_s)),
            "options": f"-c statement_timeout={math.ceil(timeout_s * 1000)}",
        }
    return create_engine(url, poolclass=NullPool, connect_args=connect_args)


def ping_database(engine: Engine) -> None:
    """Raise ``SQLAlchemyError`` unless the database answers a query (within the probe engine's timeouts)."""
    with engine.connect() as connection:
        connection.execute(text("SELECT 1"))


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session that commits on success and rolls back on error (for the worker and the admin CLI)."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def display_url(database_url: str) -> str:
    """``database_url`` as the CLI and logs may print it: no password, and a SQLite file's path made absolute, so a
    relative default (``./var``) says which folder it means."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        url = url.set(database=str(Path(url.database).resolve()))
    return url.render_as_string(hide_password=True)
