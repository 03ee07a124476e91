"""Alembic's migrations build exactly the schema of the models, on PostgreSQL and SQLite, and undo it."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.exc import IntegrityError

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


# The one expression index (storage.names compares team names case-insensitively), as each backend writes it back:
# SQLite's reflection skips expression indexes (SQLAlchemy warns, Alembic then does not compare them), so it is
# compared here as written, on PostgreSQL too (Alembic does not compare an index's WHERE clause).
_EXPRESSION_INDEXES = {
    "sqlite": [
        "CREATE UNIQUE INDEX uq_teams_live_lower_name ON teams (lower(name)) WHERE dissolved_at IS NULL",
    ],
    "postgresql": [
        "CREATE UNIQUE INDEX uq_teams_live_lower_name ON public.teams USING btree (lower((name)::text)) "
        "WHERE (dissolved_at IS NULL)",
    ],
}
_SKIPPED_ON_SQLITE = (
    r"Skipped unsupported reflection of expression-based index uq_teams_live_lower_name",
    r"autogenerate skipping metadata-specified expression-based index 'uq_teams_live_lower_name'",
)


def _expression_indexes(conn: Connection) -> list[str]:
    if conn.dialect.name == "sqlite":
        query = "SELECT sql FROM sqlite_master WHERE type = 'index' AND sql LIKE '%(lower(%' ORDER BY name"
    else:
        query = "SELECT indexdef FROM pg_indexes WHERE indexdef LIKE '%(lower(%' ORDER BY indexname"
    return list(conn.scalars(text(query)))


def test_upgrade_matches_models_and_downgrade_empties(empty_database: str) -> None:
    with upgraded(empty_database, "head") as (config, engine):
        with engine.connect() as conn, warnings.catch_warnings():
            if conn.dialect.name == "sqlite":
                for message in _SKIPPED_ON_SQLITE:
                    warnings.filterwarnings("ignore", message=message)
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            diff = compare_metadata(context, Base.metadata)
            tables = set(inspect(conn).get_table_names())
            assert _expression_indexes(conn) == _EXPRESSION_INDEXES[conn.dialect.name]
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


_BEFORE_PHASES = (
    "users (id, name, email, role, created_at) VALUES (1, 'ada', 'a@x', 'participant', '2026-01-01')",
    "users (id, name, email, role, created_at) VALUES (2, 'olga', 'o@x', 'organiser', '2026-01-01')",
    "evalsets (id, name, commitment, path, track, scenarios, current, revealed, created_at) "
    "VALUES (1, 'old', 'o', 'o.toml', 'layers-v1', '[]', false, false, '2026-01-01')",
    "evalsets (id, name, commitment, path, track, scenarios, current, revealed, created_at) "
    "VALUES (2, 'spring', 'c', 's.toml', 'layers-v1', '[]', true, false, '2026-02-01')",
    "submissions (id, owner_id, name, description, bundle_sha256, bundle_format, bundle_bytes, created_at, "
    "selected, counts_against_quota) VALUES (1, 1, 'first', '', 'h1', 'py', 1, '2026-01-15', true, true)",
    "submissions (id, owner_id, name, description, bundle_sha256, bundle_format, bundle_bytes, created_at, "
    "selected, counts_against_quota) VALUES (2, 1, 'second', '', 'h2', 'py', 1, '2026-02-02', false, false)",
    "evaluations (id, submission_id, kind, evalset_name, evalset_commitment, state, progress_done, "
    "public_progress_done, progress_total, attempts, created_at, infrastructure_failure, score_public) "
    "VALUES (1, 1, 'initial', 'spring', 'c', 'succeeded', 2, 2, 2, 1, '2026-01-15', false, '{\"overall\": 0.9}')",
    "evaluations (id, submission_id, kind, evalset_name, evalset_commitment, state, progress_done, "
    "public_progress_done, progress_total, attempts, created_at, infrastructure_failure, requested_by_id) "
    "VALUES (2, 1, 'rerun', 'spring', 'c', 'queued', 0, 0, 2, 0, '2026-02-03', false, 2)",
    "audit_log (id, at, actor_id, actor, action, target, detail) "
    "VALUES (1, '2026-02-03', 2, 'olga', 'rerun', 'submission:1', '{\"evaluation\": 2}')",
    "leaderboard_state (id, frozen, frozen_at, snapshot, private_published) "
    "VALUES (1, true, '2026-02-04', '{\"public\": {\"rows\": []}}', false)",
)


def _rows(engine: Engine, query: str) -> list[tuple[object, ...]]:
    with engine.connect() as conn:
        return [tuple(row) for row in conn.execute(text(query))]


def _json(value: object) -> object:
    return json.loads(value) if isinstance(value, str) else value


def test_0007_puts_todays_challenge_into_the_phase_main_and_takes_it_back(empty_database: str) -> None:
    with upgraded(empty_database, "0006") as (config, engine):
        with engine.begin() as conn:
            for insert in _BEFORE_PHASES:
                conn.execute(text(f"INSERT INTO {insert}"))
        before = {
            table: _rows(engine, f"SELECT * FROM {table} ORDER BY id")
            for table in ("submissions", "evaluations", "audit_log")
        }
        command.upgrade(config, "0007")

        phases = _rows(engine, "SELECT id, name, title, evalset_id, closes_at, daily_quota, visibility FROM phases")
        assert phases == [(1, "main", "Main", 2, None, None, "public")]  # on the current set, not the newest id
        opens_at = _rows(engine, "SELECT opens_at FROM phases")[0][0]
        assert str(opens_at).startswith("2026-01-15")  # open at its first submission, before its set's registration
        assert _rows(engine, "SELECT id, phase_id FROM submissions ORDER BY id") == [(1, 1), (2, 1)]
        state = _rows(engine, "SELECT id, phase_id, frozen, snapshot FROM leaderboard_state")
        assert [(i, p, bool(f), _json(s)) for i, p, f, s in state] == [(1, 1, True, {"public": {"rows": []}})]
        assert _rows(engine, "SELECT * FROM evaluations ORDER BY id") == before["evaluations"]
        assert _rows(engine, "SELECT * FROM audit_log ORDER BY id") == before["audit_log"]
        with engine.connect() as conn:
            columns = {c["name"]: c for c in inspect(conn).get_columns("submissions")}
            assert columns["phase_id"]["nullable"] is False

        # A second phase with its own state and a submission: the old schema keeps the submission, not the phase.
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO phases (id, name, title, evalset_id, opens_at, visibility, created_at) "
                    "VALUES (2, 'final', 'Final', 1, '2026-03-01', 'public', '2026-03-01')"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO leaderboard_state (id, phase_id, frozen, private_published) VALUES (2, 2, false, true)"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO submissions (id, owner_id, name, description, bundle_sha256, bundle_format, "
                    "bundle_bytes, created_at, selected, counts_against_quota, phase_id) "
                    "VALUES (3, 1, 'third', '', 'h3', 'py', 1, '2026-03-02', false, true, 2)"
                )
            )
        command.downgrade(config, "0006")

        with engine.connect() as conn:
            assert "phases" not in inspect(conn).get_table_names()
            assert "phase_id" not in {c["name"] for c in inspect(conn).get_columns("submissions")}
            assert "phase_id" not in {c["name"] for c in inspect(conn).get_columns("leaderboard_state")}
        assert _rows(engine, "SELECT * FROM submissions WHERE id < 3 ORDER BY id") == before["submissions"]
        assert _rows(engine, "SELECT name FROM submissions WHERE id = 3") == [("third",)]
        state = _rows(engine, "SELECT id, frozen, snapshot, private_published FROM leaderboard_state")
        assert [(i, bool(f), _json(s), bool(p)) for i, f, s, p in state] == [(1, True, {"public": {"rows": []}}, False)]
        assert _rows(engine, "SELECT * FROM evaluations ORDER BY id") == before["evaluations"]
        assert _rows(engine, "SELECT * FROM audit_log ORDER BY id") == before["audit_log"]

        command.upgrade(config, "head")  # and up again: the same default phase, the same submissions in it
        assert _rows(engine, "SELECT name, evalset_id FROM phases") == [("main", 2)]
        assert _rows(engine, "SELECT COUNT(*) FROM submissions WHERE phase_id IS NULL") == [(0,)]


def test_0007_on_a_database_without_sets_makes_no_phase_and_refuses_to_invent_one(empty_database: str) -> None:
    with upgraded(empty_database, "0006") as (config, engine):
        command.upgrade(config, "0007")
        assert _rows(engine, "SELECT COUNT(*) FROM phases") == [(0,)]
        command.downgrade(config, "0006")
        with engine.begin() as conn:
            conn.execute(text(f"INSERT INTO {_BEFORE_PHASES[0]}"))
            conn.execute(text(f"INSERT INTO {_BEFORE_PHASES[4]}"))
        with pytest.raises(RuntimeError, match=r"rows in submissions but no evaluation set"):
            command.upgrade(config, "0007")
        assert _rows(engine, "SELECT COUNT(*) FROM submissions") == [(1,)]


def test_0008_adds_empty_teams_and_takes_them_back_keeping_every_submission(empty_database: str) -> None:
    with upgraded(empty_database, "0006") as (config, engine):
        with engine.begin() as conn:
            for insert in _BEFORE_PHASES:
                conn.execute(text(f"INSERT INTO {insert}"))
        command.upgrade(config, "0007")
        tables = ("users", "submissions", "evaluations", "audit_log", "phases", "leaderboard_state")
        before = {table: _rows(engine, f"SELECT * FROM {table} ORDER BY id") for table in tables}
        command.upgrade(config, "0008")

        # Nothing existing moves; every participant competes alone until they form a team.
        assert {table: _rows(engine, f"SELECT * FROM {table} ORDER BY id") for table in tables} == before
        for table in ("teams", "team_members", "team_invites"):
            assert _rows(engine, f"SELECT COUNT(*) FROM {table}") == [(0,)]

        # A team, a stay that ended and one that did not: the index allows one open stay per user only.
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO teams (id, name, created_at) VALUES (1, 'ants', '2026-03-01')"))
            conn.execute(
                text(
                    "INSERT INTO team_members (team_id, user_id, joined_at, left_at) "
                    "VALUES (1, 1, '2026-03-01', '2026-03-02'), (1, 1, '2026-03-03', NULL)"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO team_invites (team_id, code_sha256, created_at, expires_at) "
                    "VALUES (1, 'c0de', '2026-03-01', '2026-03-04')"
                )
            )
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(text("INSERT INTO team_members (team_id, user_id, joined_at) VALUES (1, 1, '2026-03-05')"))

        command.downgrade(config, "0007")
        with engine.connect() as conn:
            assert not {"teams", "team_members", "team_invites"} & set(inspect(conn).get_table_names())
        assert {table: _rows(engine, f"SELECT * FROM {table} ORDER BY id") for table in tables} == before
        command.upgrade(config, "head")
        assert _rows(engine, "SELECT COUNT(*) FROM teams") == [(0,)]


def test_0009_to_0011_dissolve_emptied_teams_and_keep_each_submissions_team(empty_database: str) -> None:
    """Issue 30: the audit log's target holds 150 characters; a team its members all left is dissolved (its name
    free); a submission keeps the team its owner was in when it was made (the Ladder it probed). And back."""
    long_target = "team:" + "t" * 95
    with upgraded(empty_database, "0006") as (config, engine):
        with engine.begin() as conn:
            for insert in _BEFORE_PHASES:
                conn.execute(text(f"INSERT INTO {insert}"))
        command.upgrade(config, "0008")
        with engine.begin() as conn:
            for insert in (
                "users (id, name, email, role, created_at) VALUES (3, 'bob', 'b@x', 'participant', '2026-01-01')",
                # ants: ada's, left on 03-05 (emptied); owls: bob's (live); elks: an organiser's, never filled.
                "teams (id, name, created_at, created_by_id) VALUES (1, 'ants', '2026-03-01 00:00:00', 1), "
                "(2, 'owls', '2026-03-01 00:00:00', 3), (3, 'elks', '2026-03-01 00:00:00', 2)",
                "team_members (team_id, user_id, joined_at, left_at) VALUES "
                "(1, 1, '2026-03-01 00:00:00', '2026-03-05 00:00:00'), (2, 3, '2026-03-01 00:00:00', NULL)",
                "submissions (id, owner_id, name, description, bundle_sha256, bundle_format, bundle_bytes, created_at, "
                "selected, counts_against_quota, phase_id) VALUES "
                "(3, 1, 'in ants', '', 'h3', 'py', 1, '2026-03-02 00:00:00', false, true, 1), "
                "(4, 1, 'alone again', '', 'h4', 'py', 1, '2026-03-06 00:00:00', false, true, 1), "
                "(5, 3, 'in owls', '', 'h5', 'py', 1, '2026-03-02 00:00:00', false, true, 1)",
                "audit_log (id, at, actor_id, actor, action, target, detail) "
                f"VALUES (2, '2026-03-01', 2, 'olga', 'create_team', '{long_target}', '{{}}')",
            ):
                conn.execute(text(f"INSERT INTO {insert}"))
        command.upgrade(config, "head")

        assert _rows(engine, "SELECT id, dissolved_at IS NOT NULL FROM teams ORDER BY id") == [
            (1, True),
            (2, False),
            (3, False),
        ]
        assert _rows(engine, "SELECT id, team_id FROM submissions ORDER BY id") == [
            (1, None),
            (2, None),
            (3, 1),
            (4, None),
            (5, 2),
        ]
        with engine.begin() as conn:  # a dissolved team's name is free; a live one's is not
            conn.execute(text("INSERT INTO teams (id, name, created_at) VALUES (4, 'ants', '2026-03-07 00:00:00')"))
            conn.execute(text(f"UPDATE audit_log SET target = '{long_target + 'x' * 45}' WHERE id = 2"))
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(text("INSERT INTO teams (id, name, created_at) VALUES (5, 'owls', '2026-03-07 00:00:00')"))

        command.downgrade(config, "0008")
        # The dissolved ants gives its name up to the live one; the target is cut to the old column.
        assert _rows(engine, "SELECT id, name FROM teams ORDER BY id") == [
            (1, "ants ~1"),
            (2, "owls"),
            (3, "elks"),
            (4, "ants"),
        ]
        assert _rows(engine, "SELECT target FROM audit_log WHERE id = 2") == [(long_target,)]
        with engine.connect() as conn:
            assert "team_id" not in {c["name"] for c in inspect(conn).get_columns("submissions")}
        command.upgrade(config, "head")


def test_0017_folds_live_team_names_and_renames_a_team_named_after_a_member_who_left(empty_database: str) -> None:
    """Review of issue 30, items 5 and 6: one live team per name whatever its letters' case, the database holding it
    (the later team of a pair already made is renamed ``team-<id>``); a team that bears the name of a participant not
    in it (its founder left) is renamed too. And back: the index on exact names, the new names kept."""
    with upgraded(empty_database, "0016") as (config, engine):
        with engine.begin() as conn:
            for insert in (
                "users (id, name, email, role, created_at) VALUES (1, 'ada', 'a@x', 'participant', '2026-01-01'), "
                "(2, 'bob', 'b@x', 'participant', '2026-01-01'), (3, 'cy', 'c@x', 'participant', '2026-01-01'), "
                "(4, 'dee', 'd@x', 'participant', '2026-01-01'), (5, 'eve', 'e@x', 'participant', '2026-01-01')",
                # Twin and TWIN: made by two racing requests; twin: dissolved; ADA: ada named it, then left it to
                # dee; eve: named after its member.
                "teams (id, name, created_at, created_by_id, dissolved_at) VALUES "
                "(1, 'Twin', '2026-03-01', 2, NULL), (2, 'TWIN', '2026-03-01', 3, NULL), "
                "(3, 'twin', '2026-02-01', 3, '2026-02-02'), (4, 'ADA', '2026-03-01', 1, NULL), "
                "(5, 'eve', '2026-03-01', 5, NULL)",
                "team_members (team_id, user_id, joined_at, left_at) VALUES (1, 2, '2026-03-01', NULL), "
                "(2, 3, '2026-03-01', NULL), (4, 1, '2026-03-01', '2026-03-02'), (4, 4, '2026-03-01', NULL), "
                "(5, 5, '2026-03-01', NULL)",
            ):
                conn.execute(text(f"INSERT INTO {insert}"))
        command.upgrade(config, "0017")

        assert _rows(engine, "SELECT id, name, renamed_from FROM teams ORDER BY id") == [
            (1, "Twin", None),
            (2, "team-2", "TWIN"),
            (3, "twin", None),
            (4, "team-4", "ADA"),
            (5, "eve", None),
        ]
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(text("INSERT INTO teams (id, name, created_at) VALUES (6, 'tWIN', '2026-03-07')"))
        with engine.begin() as conn:  # a dissolved team may share a live one's name, in any letters
            conn.execute(
                text(
                    "INSERT INTO teams (id, name, created_at, dissolved_at) "
                    "VALUES (6, 'TWIN', '2026-03-07', '2026-03-08')"
                )
            )

        command.downgrade(config, "0016")
        with engine.connect() as conn:
            assert "renamed_from" not in {c["name"] for c in inspect(conn).get_columns("teams")}
            assert _expression_indexes(conn) == []
        assert _rows(engine, "SELECT id, name FROM teams ORDER BY id") == [
            (1, "Twin"),
            (2, "team-2"),
            (3, "twin"),
            (4, "team-4"),
            (5, "eve"),
            (6, "TWIN"),
        ]
        with engine.begin() as conn:  # the exact names only, as before 0017
            conn.execute(text("INSERT INTO teams (id, name, created_at) VALUES (7, 'tWIN', '2026-03-07')"))
        command.upgrade(config, "head")
        assert _rows(engine, "SELECT id, name, renamed_from FROM teams WHERE id = 7") == [(7, "team-7", "tWIN")]
