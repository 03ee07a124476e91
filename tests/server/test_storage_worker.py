"""The storage calls the worker makes: idempotent writes, progress, cancellation, stuck detection."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.models import EpisodeResult, Evaluation, Submission

from .conftest import Account, score


@pytest.fixture
def queued(db: Session, alice: Account, evalset: Any) -> Evaluation:
    _submission, evaluation = storage.create_submission(
        session=db,
        owner=alice.user,
        name="s",
        description="",
        bundle_sha256="a" * 64,
        bundle_format="py",
        bundle_bytes=10,
        phase=storage.get_phase(session=db, name=storage.DEFAULT_PHASE),
    )
    return evaluation


def start(db: Session, evaluation_id: int, worker: str = "w1", now: dt.datetime | None = None) -> Evaluation | None:
    return storage.start_evaluation(
        session=db,
        evaluation_id=evaluation_id,
        worker_id=worker,
        total=3,
        sim_version="1.0.0",
        image_digest=None,
        sandbox="process",
        now=now,
    )


def record(db: Session, evaluation_id: int, episode: str, status: str = "ok", mean: float = 1.0) -> EpisodeResult:
    return storage.record_episode_result(
        session=db,
        evaluation_id=evaluation_id,
        scenario="lab-5",
        episode_id=episode,
        split="public",
        hidden=False,
        status=status,
        metrics={"mean_completion": mean},
        primary_value=mean,
        trace_hash="t" * 64,
        n_actions=5,
        stdout="hi",
    )


def test_episode_writes_are_idempotent(db: Session, queued: Evaluation) -> None:
    start(db, queued.id)
    first = record(db, queued.id, "e0", mean=1.0)
    again = record(db, queued.id, "e0", mean=2.0)  # a redelivered task writes the same episode again
    record(db, queued.id, "e1")
    assert first.id == again.id and again.primary_value == 2.0 and again.metrics == {"mean_completion": 2.0}
    rows = db.scalar(select(func.count(EpisodeResult.id)).where(EpisodeResult.evaluation_id == queued.id))
    assert rows == 2
    db.refresh(queued)
    assert (queued.progress_done, queued.progress_total) == (2, 3)
    assert storage.recorded_episodes(session=db, evaluation_id=queued.id) == {("lab-5", "e0"), ("lab-5", "e1")}


def test_hidden_episodes_drop_output(db: Session, queued: Evaluation) -> None:
    row = storage.record_episode_result(
        session=db,
        evaluation_id=queued.id,
        scenario="x",
        episode_id="k1",
        split="private",
        hidden=True,
        status="crash",
        message="Traceback hidden",
        stdout="secret workload",
        stderr="secret",
    )
    assert (row.stdout, row.stderr, row.message) == (None, None, "Traceback hidden")


def test_record_for_missing_evaluation(db: Session, evalset: Any) -> None:
    with pytest.raises(storage.NotFound, match="evaluation 4242 does not exist"):
        record(db, 4242, "e0")


def test_resume_after_worker_death(db: Session, queued: Evaluation) -> None:
    start(db, queued.id, "w1")
    record(db, queued.id, "e0")
    again = start(db, queued.id, "w2")  # redelivered to another worker after w1 died
    assert again is not None
    assert (again.attempts, again.worker_id, again.progress_done) == (2, "w2", 1)
    assert not storage.heartbeat(session=db, evaluation_id=queued.id, worker_id="w1")  # the old one must stop
    assert storage.heartbeat(session=db, evaluation_id=queued.id, worker_id="w2")


def test_finish_succeeded_and_twice(db: Session, queued: Evaluation) -> None:
    start(db, queued.id)
    done = storage.finish_evaluation(
        session=db, evaluation_id=queued.id, state="succeeded", score_public=score(0.9), score_private=score(1.1)
    )
    assert done is not None and done.state == "succeeded" and done.finished_at is not None
    late = storage.finish_evaluation(
        session=db, evaluation_id=queued.id, state="failed", error_category="crash", error_message="late"
    )
    assert late is not None and late.state == "succeeded"  # the first outcome stands
    assert start(db, queued.id) is None  # finished work is not run again


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"state": "running"}, "an evaluation finishes as 'succeeded' or 'failed', got 'running'"),
        ({"state": "failed"}, "a failed evaluation needs an error_category and an error_message"),
    ],
    ids=["bad-state", "failed-without-reason"],
)
def test_finish_refuses(db: Session, queued: Evaluation, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        storage.finish_evaluation(session=db, evaluation_id=queued.id, **kwargs)
    assert str(caught.value) == message


def test_cancel_stops_worker(db: Session, queued: Evaluation, organiser: Account) -> None:
    start(db, queued.id)
    storage.cancel_submission(session=db, submission_id=queued.submission_id, actor=organiser.user)
    assert not storage.heartbeat(session=db, evaluation_id=queued.id, worker_id="w1")
    assert storage.finish_evaluation(session=db, evaluation_id=queued.id, state="succeeded") is None
    db.refresh(queued)
    assert queued.state == "cancelled" and queued.error_message == "cancelled by olga"
    with pytest.raises(storage.Conflict, match="has no queued or running evaluation to cancel"):
        storage.cancel_submission(session=db, submission_id=queued.submission_id, actor=organiser.user)


def test_expire_stuck(db: Session, queued: Evaluation) -> None:
    t0 = dt.datetime(2030, 1, 1, 12, 0, tzinfo=dt.timezone.utc)
    start(db, queued.id, "w1", now=t0)
    timeout = dt.timedelta(minutes=10)
    assert storage.expire_stuck_evaluations(session=db, now=t0 + dt.timedelta(minutes=9), timeout=timeout) == []
    assert storage.heartbeat(session=db, evaluation_id=queued.id, worker_id="w1", now=t0 + dt.timedelta(minutes=5))
    assert storage.expire_stuck_evaluations(session=db, now=t0 + dt.timedelta(minutes=14), timeout=timeout) == []
    expired = storage.expire_stuck_evaluations(session=db, now=t0 + dt.timedelta(minutes=16), timeout=timeout)
    assert [e.id for e in expired] == [queued.id]
    db.refresh(queued)
    assert queued.state == "failed" and queued.infrastructure_failure and queued.error_category == "infrastructure"
    assert queued.error_message == (
        "no heartbeat from worker 'w1' since 2030-01-01T12:05:00+00:00 (timeout 600 s, attempt 1)"
    )
    submission = db.get(Submission, queued.submission_id)
    assert submission is not None and submission.counts_against_quota is False


def test_requeue_stale(db: Session, queued: Evaluation) -> None:
    t0 = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)
    start(db, queued.id, "w1", now=t0)
    stale = storage.list_stale_evaluations(session=db, now=t0 + dt.timedelta(hours=1), timeout=dt.timedelta(minutes=1))
    assert [e.id for e in stale] == [queued.id]
    again = storage.requeue_evaluation(session=db, evaluation_id=queued.id)
    assert again is not None and (again.state, again.worker_id) == ("queued", None)


def test_timestamps_are_utc_aware(db: Session, queued: Evaluation) -> None:
    db.expire_all()
    row = db.get(Evaluation, queued.id)
    assert row is not None and row.created_at.tzinfo is not None and row.created_at.utcoffset() == dt.timedelta(0)


def test_baseline_cache_upsert(db: Session) -> None:
    first = storage.upsert_baseline_result(
        session=db,
        evalset_commitment="c" * 64,
        sim_version="1.0.0",
        baseline="Greedy",
        score_public=score(1.0, 0),
        score_private=score(1.0, 0),
    )
    second = storage.upsert_baseline_result(
        session=db,
        evalset_commitment="c" * 64,
        sim_version="1.0.0",
        baseline="Greedy",
        score_public=score(1.0, 0.01),
        score_private=None,
    )
    assert first.id == second.id
    got = storage.get_baseline_result(session=db, evalset_commitment="c" * 64, sim_version="1.0.0", baseline="Greedy")
    assert got is not None and got.score_private is None and got.score_public == score(1.0, 0.01)


def test_concurrent_duplicate_writes_make_one_row(db: Session, queued: Evaluation, settings: Any) -> None:
    """Two deliveries of the same task racing: the unique key and the upsert keep one row per episode."""
    from concurrent.futures import ThreadPoolExecutor

    from layersched.server.db import make_engine, make_sessionmaker

    engine = make_engine(settings.database_url)
    factory = make_sessionmaker(engine)

    def write(i: int) -> None:
        with factory() as session:
            storage.record_episode_result(
                session=session,
                evaluation_id=queued.id,
                scenario="lab-5",
                episode_id=f"e{i % 2}",
                split="public",
                hidden=False,
                status="ok",
                metrics={"mean_completion": float(i)},
                primary_value=float(i),
            )

    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(write, range(16)))
    finally:
        engine.dispose()
    assert storage.recorded_episodes(session=db, evaluation_id=queued.id) == {("lab-5", "e0"), ("lab-5", "e1")}
    db.refresh(queued)
    assert queued.progress_done == 2
