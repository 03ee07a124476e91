"""Races between participants, organisers and workers (issue 15, finding 11).

Reviewed main: on SQLite (``layersched serve``) 20 parallel uploads against ``max_in_flight=2`` and
``daily_quota=3`` got 10 accepted; on PostgreSQL an organiser's cancel overwrote a result the worker had just
committed (``cancelled``, its 0.8 score stored, off the board), and the stuck-evaluation expiry could do the same.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session
from starlette.exceptions import StarletteDeprecationWarning

from layersched.server import storage
from layersched.server.admin import upgrade_database
from layersched.server.app import create_app
from layersched.server.config import Settings
from layersched.server.db import make_engine, make_sessionmaker
from layersched.server.errors import Conflict
from layersched.server.models import Evaluation, Submission, utcnow
from layersched.server.storage import evaluations, submissions
from tests.server.conftest import (
    BROKER,
    PG_URL,
    SCENARIOS,
    Account,
    Captured,
    burst,
    create_pg_database,
    drop_pg_database,
    score,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    """A fresh database of each kind (SQLite as ``layersched serve`` keeps it: a file, several connections)."""
    name = None
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'layersched.db'}"
    else:
        name = create_pg_database()
        url = PG_URL.format(name=name)
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=url,
        broker_url=BROKER,
        bundle_dir=tmp_path / "bundles",
        daily_quota=3,
        max_in_flight=2,
    )
    upgrade_database(settings=settings)
    yield settings
    if name is not None:
        drop_pg_database(name)


@pytest.fixture
def session(settings: Settings) -> Iterator[Session]:
    engine = make_engine(settings.database_url)
    with make_sessionmaker(engine)() as db:
        storage.register_evalset(
            session=db, name="sample", commitment="c" * 64, path="hidden_seeds/sample.toml", scenarios=SCENARIOS
        )
        yield db
    engine.dispose()


def account(db: Session, name: str, role: str = "participant") -> Account:
    user = storage.create_user(session=db, name=name, email=f"{name}@example.org", role=role)
    return Account(user, storage.issue_token(session=db, user_id=user.id)[1])


def test_a_burst_of_uploads_is_counted_exactly(settings: Settings, session: Session) -> None:
    student = account(session, "alice")
    with TestClient(create_app(settings, enqueuer=Captured())) as client:
        assert burst(client, student) == [201, 201] + [429] * 18
    assert session.scalar(select(func.count(Submission.id))) == 2


def running_submission(db: Session, student: Account) -> tuple[Submission, Evaluation]:
    """A submission of ``student`` whose evaluation a worker has started."""
    submission, evaluation = storage.create_submission(
        session=db,
        owner=student.user,
        name="p",
        description="",
        bundle_sha256="a" * 64,
        bundle_format="py",
        bundle_bytes=1,
        phase=storage.get_phase(session=db, name=storage.DEFAULT_PHASE),
    )
    started(db, evaluation.id)
    return submission, evaluation


def started(db: Session, evaluation_id: int) -> None:
    storage.start_evaluation(
        session=db,
        evaluation_id=evaluation_id,
        worker_id="w1",
        total=0,
        sim_version="1",
        image_digest="d",
        sandbox="docker",
    )


def finished_meanwhile(settings: Settings, evaluation_id: int) -> None:
    """The worker, on its own connection, commits the evaluation's result."""
    engine = make_engine(settings.database_url)
    with make_sessionmaker(engine)() as worker:
        storage.finish_evaluation(
            session=worker,
            evaluation_id=evaluation_id,
            state="succeeded",
            score_public=score(0.8),
            score_private=score(0.8),
        )
    engine.dispose()


def test_a_cancel_keeps_a_result_the_worker_committed_meanwhile(
    settings: Settings, session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    olga = account(session, "olga", role="organiser")
    submission, evaluation = running_submission(session, account(session, "alice"))
    real = storage.get_submission

    def read_then_the_worker_finishes(**kwargs: Any) -> Submission:
        found = real(**kwargs)  # the organiser's read saw it running
        finished_meanwhile(settings, evaluation.id)
        return found

    monkeypatch.setattr(submissions, "get_submission", read_then_the_worker_finishes)
    with pytest.raises(Conflict, match=f"submission {submission.id} has no queued or running evaluation to cancel"):
        storage.cancel_submission(session=session, submission_id=submission.id, actor=olga.user)
    session.expire_all()
    row = session.get(Evaluation, evaluation.id)
    assert row is not None and (row.state, row.score_public["overall"]) == ("succeeded", 0.8)  # type: ignore[index]


def test_the_stuck_expiry_keeps_a_result_the_worker_committed_meanwhile(
    settings: Settings, session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datetime as dt

    _, evaluation = running_submission(session, account(session, "alice"))
    real = storage.list_stale_evaluations

    def listed_then_the_worker_finishes(**kwargs: Any) -> list[Evaluation]:
        stale = real(**kwargs)
        finished_meanwhile(settings, evaluation.id)
        return stale

    monkeypatch.setattr(evaluations, "list_stale_evaluations", listed_then_the_worker_finishes)
    later = utcnow() + dt.timedelta(hours=1)
    assert storage.expire_stuck_evaluations(session=session, now=later, timeout=dt.timedelta(minutes=10)) == []
    session.expire_all()
    row = session.get(Evaluation, evaluation.id)
    assert row is not None and (row.state, row.infrastructure_failure) == ("succeeded", False)
