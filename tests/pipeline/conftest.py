"""Fixtures for the evaluation pipeline: a migrated database, the sample set registered, submissions on disk."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from layersched.server import storage
from layersched.server.admin import upgrade_database
from layersched.server.bundles import store_bundle
from layersched.server.config import Settings
from layersched.server.db import make_engine, make_sessionmaker
from layersched.server.models import Evaluation, User
from layersched.worker.evalsets import register_and_score
from tests.server.conftest import create_pg_database, drop_pg_database

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ROOT / "tests" / "worker" / "policies"
SAMPLE = ROOT / "hidden_seeds" / "sample.toml"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'layersched.db'}"
        return
    name = create_pg_database()
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        drop_pg_database(name)


@pytest.fixture
def settings(database_url: str, tmp_path: Path, baseline_cache: Path) -> Settings:
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=database_url,
        broker_url="redis://127.0.0.1:6379/14",
        bundle_dir=tmp_path / "bundles",
        baseline_cache_dir=baseline_cache,
        evalset_path=SAMPLE,
        sandbox_backend="process",
    )
    upgrade_database(settings=settings)
    register_and_score(path=SAMPLE, settings=settings)
    return settings


@pytest.fixture(scope="session")
def baseline_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("baselines")


@pytest.fixture
def sessions(settings: Settings) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(settings.database_url)
    yield make_sessionmaker(engine)
    engine.dispose()


@dataclass
class Submitted:
    submission_id: int
    evaluation_id: int
    bundle_sha256: str


@pytest.fixture
def submit(settings: Settings, sessions: sessionmaker[Session]):  # type: ignore[no-untyped-def]
    """Store a policy file as a submission by a fresh participant; returns ids of it and its initial evaluation."""
    counter = iter(range(1000))

    def make(policy: str = "greedy") -> Submitted:
        data = (POLICIES / policy / "policy.py").read_bytes()
        store_bundle(data, bundle_dir=settings.bundle_dir)
        with sessions() as session:
            n = next(counter)
            user = storage.create_user(session=session, name=f"student{n}", email=f"s{n}@example.org")
            submission, evaluation = storage.create_submission(
                session=session,
                owner=user,
                name=policy,
                description="",
                bundle_sha256=hashlib.sha256(data).hexdigest(),
                bundle_format="py",
                bundle_bytes=len(data),
                phase=storage.get_phase(session=session, name=storage.DEFAULT_PHASE),
            )
            return Submitted(submission.id, evaluation.id, submission.bundle_sha256)

    return make


def organiser(session: Session) -> User:
    user = session.query(User).filter_by(name="olga").one_or_none()
    return user or storage.create_user(session=session, name="olga", email="olga@example.org", role="organiser")


def evaluation(sessions: sessionmaker[Session], evaluation_id: int) -> Evaluation:
    with sessions() as session:
        row = session.get(Evaluation, evaluation_id)
        assert row is not None
        session.expunge(row)
        return row
