"""Fixtures of the server tests: real databases (a fresh PostgreSQL database per run, and SQLite), the app with
a capturing enqueuer, and helpers that create users and drive evaluations through the worker's storage calls."""

from __future__ import annotations

import secrets
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
from starlette.exceptions import StarletteDeprecationWarning

with warnings.catch_warnings():
    # Starlette 1 prefers httpx2 for its test client and warns when it falls back to httpx (what the SDK uses).
    # The fallback works; this silences only that one import-time warning. Adding httpx2 to the dev extra ends it.
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from layersched.server import storage
from layersched.server.admin import upgrade_database
from layersched.server.app import create_app
from layersched.server.config import Settings
from layersched.server.db import make_engine, make_sessionmaker
from layersched.server.models import Base, EvalSet, User

from . import stand_in_track

PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
BROKER = "redis://127.0.0.1:6379/15"

SCENARIOS = [
    {"name": "lab-5", "weight": 1.0, "public_episodes": 2},
    {"name": "hub-20", "weight": 1.0, "public_episodes": 2},
]

POLICY = b"def policy(env, task, rng):\n    return 0\n"


def create_pg_database() -> str:
    """A fresh, empty database; its name is random so parallel runs never meet."""
    name = f"layersched_test_{secrets.token_hex(6)}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name


def drop_pg_database(name: str) -> None:
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """One migrated PostgreSQL database for the session's API tests (tables are emptied between tests)."""
    name = create_pg_database()
    url = PG_URL.format(name=name)
    try:
        upgrade_database(settings=Settings(database_url=url, _env_file=None))  # type: ignore[call-arg]
        yield url
    finally:
        drop_pg_database(name)


@pytest.fixture(scope="session")
def sqlite_database(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('sqlite') / 'layersched.db'}"
    upgrade_database(settings=Settings(database_url=url, _env_file=None))  # type: ignore[call-arg]
    return url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each API test runs against both backends, on empty tables."""
    url: str = request.getfixturevalue(f"{request.param}_database")
    engine = make_engine(url)
    _empty(engine)
    engine.dispose()
    yield url


def _empty(engine: Engine) -> None:
    tables = [t.name for t in reversed(Base.metadata.sorted_tables)]
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE"))
        else:
            for table in tables:
                conn.execute(text(f"DELETE FROM {table}"))


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=database_url,
        broker_url=BROKER,
        bundle_dir=tmp_path / "bundles",
        max_bundle_mb=0.05,  # 50 kB: small enough that a test can exceed it cheaply
        max_files=10,
        max_unpacked_mb=0.2,
        daily_quota=3,
        max_in_flight=2,
    )


@dataclass
class Captured:
    """Stands in for Celery: records what the server sends."""

    calls: list[tuple[str, list[int], str]] = field(default_factory=list)

    def __call__(self, task_name: str, *, args: list[int], queue: str) -> None:
        self.calls.append((task_name, args, queue))


@pytest.fixture
def enqueued() -> Captured:
    return Captured()


@pytest.fixture
def client(settings: Settings, enqueued: Captured) -> Iterator[TestClient]:
    with TestClient(create_app(settings, enqueuer=enqueued)) as test_client:
        yield test_client


@pytest.fixture
def db(settings: Settings) -> Iterator[Session]:
    engine = make_engine(settings.database_url)
    factory: sessionmaker[Session] = make_sessionmaker(engine)
    with factory() as session:
        yield session
    engine.dispose()


@dataclass
class Account:
    user: User
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture
def make_account(db: Session) -> Any:
    def make(name: str, role: str = "participant") -> Account:
        user = storage.create_user(session=db, name=name, email=f"{name}@example.org", role=role)
        _token, plain = storage.issue_token(session=db, user_id=user.id)
        return Account(user, plain)

    return make


@pytest.fixture
def evalset(db: Session) -> Any:
    return storage.register_evalset(
        session=db, name="sample", commitment="c" * 64, path="hidden_seeds/sample.toml", scenarios=SCENARIOS
    )


@pytest.fixture
def alice(make_account: Any, evalset: Any) -> Account:
    return make_account("alice")


@pytest.fixture
def bob(make_account: Any, evalset: Any) -> Account:
    return make_account("bob")


@pytest.fixture
def organiser(make_account: Any, evalset: Any) -> Account:
    return make_account("olga", role="organiser")


def submit(
    client: TestClient,
    account: Account,
    content: bytes = POLICY,
    filename: str = "policy.py",
    name: str = "my policy",
    description: str = "",
) -> Any:
    return client.post(
        "/api/v1/submissions",
        headers=account.headers,
        files={"file": (filename, content, "application/octet-stream")},
        data={"name": name, "description": description},
    )


def burst(client: TestClient, account: Account, n: int = 20) -> list[int]:
    """``n`` uploads of one participant at once (released together by a barrier); their statuses, sorted."""
    import threading

    barrier = threading.Barrier(n)
    statuses: list[int] = []

    def one(i: int) -> None:
        barrier.wait()
        statuses.append(submit(client, account, POLICY + f"# {i}\n".encode()).status_code)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(statuses)


def score(overall: float, spread: float = 0.02) -> dict[str, Any]:
    return {
        "overall": overall,
        "ci_low": overall - spread,
        "ci_high": overall + spread,
        "per_scenario": {"lab-5": overall * 0.98, "hub-20": overall * 1.02},
    }


def register_stand_in_set(session: Session) -> EvalSet:
    """A set on the stand-in track (``stand_in_track``), current from now on, with its reference baseline's row."""
    stand_in_track.register()
    evalset = storage.register_evalset(
        session=session, name="toy", commitment="t" * 64, path="toy.toml", scenarios=[], track=stand_in_track.TRACK_ID
    )
    storage.upsert_baseline_result(
        session=session,
        evalset_commitment=evalset.commitment,
        sim_version="1.0.0",
        baseline=stand_in_track.REFERENCE,
        score_public=score(1.0),
        score_private=score(1.0),
    )
    return evalset


def run_evaluation(
    session: Session,
    evaluation_id: int,
    *,
    public: float | None = 0.9,
    private: float | None = 0.95,
    fail: tuple[str, str] | None = None,
    infrastructure: bool = False,
) -> None:
    """Drive an evaluation as the worker does: start, one episode per scenario, finish."""
    storage.start_evaluation(
        session=session,
        evaluation_id=evaluation_id,
        worker_id="w1",
        total=2,
        sim_version="1.0.0",
        image_digest="sha256:" + "ab" * 32,
        sandbox="process",
    )
    for i, scenario in enumerate(("lab-5", "hub-20")):
        storage.record_episode_result(
            session=session,
            evaluation_id=evaluation_id,
            scenario=scenario,
            episode_id=f"e{i}",
            split="public",
            hidden=(i == 1),
            status="ok",
            message="",
            metrics={"mean_completion": 10.0 + i, "p95_completion": 20.0, "cloud_share": 0.1},
            primary_value=10.0 + i,
            trace_hash="f" * 64,
            n_actions=50,
            stdout=f"out {scenario}",
            stderr=f"err {scenario}",
        )
    if fail is not None:
        storage.finish_evaluation(
            session=session,
            evaluation_id=evaluation_id,
            state="failed",
            error_category=fail[0],
            error_message=fail[1],
            public_error_message=fail[1],  # as the worker writes it for a failing episode that is not hidden
            infrastructure_failure=infrastructure,
        )
    else:
        storage.finish_evaluation(
            session=session,
            evaluation_id=evaluation_id,
            state="succeeded",
            score_public=score(public) if public is not None else None,
            score_private=score(private) if private is not None else None,
        )
