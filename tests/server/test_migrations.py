"""Alembic's migrations build exactly the schema of the models, on PostgreSQL and SQLite, and undo it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

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


def test_upgrade_matches_models_and_downgrade_empties(empty_database: str) -> None:
    config = alembic_config(empty_database)
    command.upgrade(config, "head")

    engine = make_engine(empty_database)
    try:
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
    finally:
        engine.dispose()


def test_single_head() -> None:
    from alembic.script import ScriptDirectory

    heads = ScriptDirectory.from_config(alembic_config("sqlite://")).get_heads()
    assert len(heads) == 1, heads
