"""Alembic's migrations build exactly the schema of the models, on PostgreSQL and SQLite, and undo it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import Engine, inspect, text

from layersched.server.admin import alembic_config
from layersched.server.db import make_engine
from layersched.server.models import Base

from .conftest import PG_URL, create_pg_database, drop_pg_database


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'fresh.db'}"
        return
    name = create_pg_database()
    try:
        yield PG_URL.format(name=name)
    finally:
        drop_pg_database(name)


@contextmanager
def upgraded(database_url: str, revision: str) -> Iterator[tuple[Config, Engine]]:
    """The database migrated up to ``revision``: its Alembic config and an engine, disposed afterwards."""
    config = alembic_config(database_url)
    command.upgrade(config, revision)
    engine = make_engine(database_url)
    try:
        yield config, engine
    finally:
        engine.dispose()


def test_upgrade_matches_models_and_downgrade_empties(empty_database: str) -> None:
    with upgraded(empty_database, "head") as (config, engine):
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            diff = compare_metadata(context, Base.metadata)
            tables = set(inspect(conn).get_table_names())
        assert diff == []
        assert tables == {*Base.metadata.tables, "alembic_version"}

        command.downgrade(config, "base")
        with engine.connect() as conn:
            assert set(inspect(conn).get_table_names()) == {"alembic_version"}

        command.upgrade(config, "head")  # and back up again: the downgrade left nothing behind
        with engine.connect() as conn:
            assert set(inspect(conn).get_table_names()) == {*Base.metadata.tables, "alembic_version"}


def test_single_head() -> None:
    from alembic.script import ScriptDirectory

    heads = ScriptDirectory.from_config(alembic_config("sqlite://")).get_heads()
    assert len(heads) == 1, heads


def test_0004_gives_existing_tokens_a_session_generation_and_takes_it_back(empty_database: str) -> None:
    with upgraded(empty_database, "0003") as (config, engine):
        with engine.begin() as conn:
            for insert in (
                "users (id, name, email, role, created_at) VALUES (1, 'ada', 'a@x', 'participant', '2026-01-01')",
                "api_tokens (id, user_id, lookup, token_sha256, created_at) VALUES (1, 1, 'l', 's', '2026-01-01')",
            ):
                conn.execute(text(f"INSERT INTO {insert}"))
        command.upgrade(config, "0004")
        with engine.connect() as conn:
            assert conn.execute(text("SELECT session_generation FROM api_tokens")).scalar_one() == 0
        command.downgrade(config, "0003")
        with engine.connect() as conn:
            assert "session_generation" not in {c["name"] for c in inspect(conn).get_columns("api_tokens")}
            assert conn.execute(text("SELECT lookup FROM api_tokens")).scalar_one() == "l"


def test_0005_puts_existing_sets_on_layers_v1_and_takes_the_track_back(empty_database: str) -> None:
    with upgraded(empty_database, "0004") as (config, engine):
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO evalsets (id, name, commitment, path, scenarios, current, revealed, created_at) "
                    "VALUES (1, 'spring', 'c', 's.toml', '[]', true, false, '2026-01-01')"
                )
            )
        command.upgrade(config, "0005")
        with engine.connect() as conn:
            assert conn.execute(text("SELECT track FROM evalsets")).scalar_one() == "layers-v1"
            column = next(c for c in inspect(conn).get_columns("evalsets") if c["name"] == "track")
            assert column["nullable"] is False
        command.downgrade(config, "0004")
        with engine.connect() as conn:
            assert "track" not in {c["name"] for c in inspect(conn).get_columns("evalsets")}
            assert conn.execute(text("SELECT name FROM evalsets")).scalar_one() == "spring"
