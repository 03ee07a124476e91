"""Alembic's migrations build exactly the schema of the models, on PostgreSQL and SQLite, and undo it."""

from __future__ import annotations

import json
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


def test_0006_moves_the_lab_columns_into_named_metrics_and_back(empty_database: str) -> None:
    with upgraded(empty_database, "0005") as (config, engine):
        with engine.begin() as conn:
            for insert in (
                "users (id, name, email, role, created_at) VALUES (1, 'ada', 'a@x', 'participant', '2026-01-01')",
                "submissions (id, owner_id, name, description, bundle_sha256, bundle_format, bundle_bytes, "
                "created_at, selected, counts_against_quota) VALUES (1, 1, 's', '', 'h', 'py', 1, '2026-01-01', "
                "false, true)",
                "evaluations (id, submission_id, kind, evalset_name, evalset_commitment, state, progress_done, "
                "progress_total, attempts, created_at, infrastructure_failure) "
                "VALUES (1, 1, 'initial', 'sample', 'c', 'succeeded', 2, 2, 1, '2026-01-01', false)",
                "episode_results (id, evaluation_id, scenario, episode_id, split, hidden, status, message, "
                "mean_completion, p95_completion, cloud_share, n_actions, recorded_at) "
                "VALUES (1, 1, 'lab', 'e0', 'public', false, 'ok', '', 56.5, 90.25, 0.1, 300, '2026-01-01')",
                "episode_results (id, evaluation_id, scenario, episode_id, split, hidden, status, message, "
                "n_actions, recorded_at) VALUES (2, 1, 'lab', 'e1', 'public', false, 'crash', 'x', 3, '2026-01-01')",
            ):
                conn.execute(text(f"INSERT INTO {insert}"))
        command.upgrade(config, "0006")
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT id, metrics, primary_value FROM episode_results ORDER BY id")).all()
            metrics = [json.loads(m) if isinstance(m, str) else m for _, m, _ in rows]
            assert metrics == [{"mean_completion": 56.5, "p95_completion": 90.25, "cloud_share": 0.1}, None]
            assert [p for _, _, p in rows] == [56.5, None]
            assert "mean_completion" not in {c["name"] for c in inspect(conn).get_columns("episode_results")}
        command.downgrade(config, "0005")
        with engine.connect() as conn:
            back = conn.execute(
                text("SELECT mean_completion, p95_completion, cloud_share FROM episode_results ORDER BY id")
            ).all()
            assert [tuple(r) for r in back] == [(56.5, 90.25, 0.1), (None, None, None)]
            assert "metrics" not in {c["name"] for c in inspect(conn).get_columns("episode_results")}
