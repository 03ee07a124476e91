"""The reconciler against a real database and a real Redis broker."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
from sqlalchemy.orm import Session, sessionmaker

from layersched.server import storage
from layersched.server.config import Settings
from layersched.server.models import Evaluation, utcnow
from layersched.server.queue import EVALUATE_TASK, EVALUATIONS_QUEUE, CeleryEnqueuer
from layersched.worker.pipeline import RetryableError
from layersched.worker.reconcile import reconcile_once
from layersched.worker.tasks import requeue_or_give_up
from tests.pipeline.conftest import Submitted, evaluation

pytestmark = pytest.mark.redis


@dataclass
class Sent:
    calls: list[tuple[str, list[int], str]] = field(default_factory=list)

    def __call__(self, task_name: str, *, args: list[int], queue: str) -> None:
        self.calls.append((task_name, args, queue))


@pytest.fixture(autouse=True)
def empty_broker(settings: Settings) -> None:
    redis.Redis.from_url(settings.broker_url).flushdb()


def _set(sessions: sessionmaker[Session], evaluation_id: int, **values: Any) -> None:
    with sessions() as session:
        row = session.get(Evaluation, evaluation_id)
        assert row is not None
        for key, value in values.items():
            setattr(row, key, value)
        session.commit()


def test_running_evaluation_of_a_dead_worker_is_requeued(
    settings: Settings, sessions: sessionmaker[Session], submit: Any
) -> None:
    sub: Submitted = submit("greedy")
    silent_since = utcnow() - dt.timedelta(seconds=settings.stuck_timeout_s + 5)
    _set(sessions, sub.evaluation_id, state="running", worker_id="dead:1", heartbeat_at=silent_since, attempts=1)
    sent = Sent()
    with sessions() as session:
        report = reconcile_once(session=session, settings=settings, enqueuer=sent)
    assert report.requeued_stale == [sub.evaluation_id] and report.failed == []
    assert sent.calls == [(EVALUATE_TASK, [sub.evaluation_id], EVALUATIONS_QUEUE)]
    assert evaluation(sessions, sub.evaluation_id).state == "queued"


def test_live_worker_is_left_alone(settings: Settings, sessions: sessionmaker[Session], submit: Any) -> None:
    sub: Submitted = submit("greedy")
    _set(sessions, sub.evaluation_id, state="running", worker_id="alive:1", heartbeat_at=utcnow(), attempts=1)
    sent = Sent()
    with sessions() as session:
        report = reconcile_once(session=session, settings=settings, enqueuer=sent)
    assert (report.requeued_stale, report.failed, report.resent_lost, sent.calls) == ([], [], [], [])


def test_gives_up_after_max_attempts_with_a_reason_and_returns_the_quota(
    settings: Settings, sessions: sessionmaker[Session], submit: Any
) -> None:
    sub: Submitted = submit("greedy")
    silent_since = utcnow() - dt.timedelta(seconds=settings.stuck_timeout_s + 5)
    _set(
        sessions,
        sub.evaluation_id,
        state="running",
        worker_id="dead:7",
        heartbeat_at=silent_since,
        attempts=settings.max_attempts,
    )
    with sessions() as session:
        report = reconcile_once(session=session, settings=settings, enqueuer=Sent())
    assert report.failed == [sub.evaluation_id]
    failed = evaluation(sessions, sub.evaluation_id)
    assert failed.state == "failed" and failed.infrastructure_failure
    assert failed.error_message is not None and "no heartbeat from worker 'dead:7'" in failed.error_message
    with sessions() as session:
        assert not storage.load_submission(session=session, submission_id=sub.submission_id).counts_against_quota


def test_queued_evaluation_whose_message_was_lost_is_sent_again(
    settings: Settings, sessions: sessionmaker[Session], submit: Any
) -> None:
    sub: Submitted = submit("greedy")
    _set(sessions, sub.evaluation_id, created_at=utcnow() - dt.timedelta(seconds=settings.requeue_after_s + 5))
    # The queue is empty (as after a Redis restart without persistence): the evaluation is sent again, for real.
    with sessions() as session:
        report = reconcile_once(session=session, settings=settings, enqueuer=CeleryEnqueuer(settings.broker_url))
    assert report.resent_lost == [sub.evaluation_id]
    assert redis.Redis.from_url(settings.broker_url).llen(EVALUATIONS_QUEUE) == 1
    # Next pass: the message is in the queue, so nothing is sent twice.
    sent = Sent()
    with sessions() as session:
        assert reconcile_once(session=session, settings=settings, enqueuer=sent).resent_lost == []
    assert sent.calls == []


def test_recent_queued_evaluation_is_not_resent(
    settings: Settings, sessions: sessionmaker[Session], submit: Any
) -> None:
    submit("greedy")
    sent = Sent()
    with sessions() as session:
        assert reconcile_once(session=session, settings=settings, enqueuer=sent).resent_lost == []
    assert sent.calls == []


def test_broker_down_leaves_work_queued(settings: Settings, sessions: sessionmaker[Session], submit: Any) -> None:
    sub: Submitted = submit("greedy")
    _set(sessions, sub.evaluation_id, created_at=utcnow() - dt.timedelta(seconds=settings.requeue_after_s + 5))
    unreachable = settings.model_copy(update={"broker_url": "redis://127.0.0.1:1/0"})
    sent = Sent()
    with sessions() as session:
        report = reconcile_once(session=session, settings=unreachable, enqueuer=sent)
    assert report.resent_lost == [] and sent.calls == []
    assert evaluation(sessions, sub.evaluation_id).state == "queued"


def test_a_message_sent_again_does_not_buy_more_attempts(
    settings: Settings, sessions: sessionmaker[Session], submit: Any
) -> None:
    """The reconciler may send an evaluation again while a Celery retry of it waits; that copy starts with Celery's
    retry count at 0, but the database has counted every start: the bound holds."""
    sub: Submitted = submit("greedy")
    _set(sessions, sub.evaluation_id, state="running", worker_id="w:1", attempts=settings.max_attempts)
    with sessions() as session:
        ended = requeue_or_give_up(
            session=session,
            settings=settings,
            evaluation_id=sub.evaluation_id,
            celery_retries=0,
            error=RetryableError("Docker engine unavailable"),
        )
    assert ended == "failed"
    failed = evaluation(sessions, sub.evaluation_id)
    assert failed.state == "failed" and failed.infrastructure_failure
    assert failed.error_message == f"gave up after {settings.max_attempts} attempts: Docker engine unavailable"


@pytest.mark.parametrize(("db_attempts", "celery_retries"), [(0, 0), (1, 0), (0, 1)])
def test_below_the_bound_the_evaluation_goes_back_to_the_queue(
    settings: Settings, sessions: sessionmaker[Session], submit: Any, db_attempts: int, celery_retries: int
) -> None:
    assert settings.max_attempts > 2  # so that every case below is under the bound
    sub: Submitted = submit("greedy")
    _set(sessions, sub.evaluation_id, state="running", worker_id="w:1", attempts=db_attempts)
    with sessions() as session:
        ended = requeue_or_give_up(
            session=session,
            settings=settings,
            evaluation_id=sub.evaluation_id,
            celery_retries=celery_retries,
            error=RetryableError("bundle missing"),
        )
    assert ended is None
    assert evaluation(sessions, sub.evaluation_id).state == "queued"


def test_failures_before_any_start_are_bounded_by_celerys_count(
    settings: Settings, sessions: sessionmaker[Session], submit: Any
) -> None:
    """An evaluation that never starts (its bundle is missing) never raises the database's count: Celery's does."""
    sub: Submitted = submit("greedy")
    with sessions() as session:
        ended = requeue_or_give_up(
            session=session,
            settings=settings,
            evaluation_id=sub.evaluation_id,
            celery_retries=settings.max_attempts - 1,
            error=RetryableError("bundle missing"),
        )
    assert ended == "failed"
    assert evaluation(sessions, sub.evaluation_id).attempts == 0


def test_an_evaluation_that_ended_meanwhile_is_left_alone(
    settings: Settings, sessions: sessionmaker[Session], submit: Any
) -> None:
    sub: Submitted = submit("greedy")
    _set(sessions, sub.evaluation_id, state="cancelled")
    with sessions() as session:
        ended = requeue_or_give_up(
            session=session,
            settings=settings,
            evaluation_id=sub.evaluation_id,
            celery_retries=9,
            error=RetryableError("x"),
        )
    assert ended == "ended" and evaluation(sessions, sub.evaluation_id).state == "cancelled"


def test_the_reconciler_writes_its_workers_heartbeat_and_takes_it_away_when_it_stops(
    settings: Settings, sessions: sessionmaker[Session]
) -> None:
    from sqlalchemy import select

    from layersched.server.models import WorkerHeartbeat
    from layersched.worker.reconcile import Reconciler

    reconciler = Reconciler(sessions=sessions, settings=settings, enqueuer=Sent(), worker_id="host-a:7")
    reconciler.stop()  # its loop ends at once: run() writes the first heartbeat and returns
    reconciler.run()
    with sessions() as session:
        assert [w.worker_id for w in session.scalars(select(WorkerHeartbeat))] == ["host-a:7"]
    reconciler.stop()
    with sessions() as session:
        assert list(session.scalars(select(WorkerHeartbeat))) == []
