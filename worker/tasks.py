"""Celery tasks: thin wrappers that take an evaluation id and call ``layersched.worker.pipeline``.

They re-read everything from the database, exit quietly when the row is gone or already finished, and retry the
service's own failures (``RetryableError``, and any exception nobody expected), with backoff and jitter, a bounded
number of times; after that the evaluation fails with the reason and the participant's quota is given back. An
exception never ends a task silently: Celery would acknowledge the message, the evaluation would stay queued and the
reconciler would send it again, for ever.
"""

from __future__ import annotations

import logging
import os
import socket
from functools import lru_cache

from celery import Task
from sqlalchemy.orm import Session, sessionmaker

from layersched.server import storage
from layersched.server.config import Settings, get_settings
from layersched.server.db import make_engine
from layersched.server.queue import AUDIT_TASK, EVALUATE_TASK
from layersched.worker.celery_app import app
from layersched.worker.pipeline import EvaluationReport, RetryableError, run_evaluation

log = logging.getLogger(__name__)


@lru_cache
def _sessions() -> sessionmaker[Session]:
    return sessionmaker(make_engine(get_settings().database_url), expire_on_commit=False)


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def requeue_or_give_up(
    *, session: Session, settings: Settings, evaluation_id: int, celery_retries: int, error: Exception
) -> str | None:
    """After a service failure: put the evaluation back to queued and return None (retry it), or end it.

    Returns "ended" when it was cancelled or finished meanwhile, "failed" when it has had ``max_attempts``: the
    database counts every start, also those of messages the reconciler sent again while a retry of this one waited
    (so Celery's retry count alone would let attempts exceed the bound), and Celery's count covers the failures
    before a start (evaluation set or bundle missing), which the database never sees.
    """
    evaluation = storage.requeue_evaluation(session=session, evaluation_id=evaluation_id)
    if evaluation is None:
        return "ended"
    attempts = max(evaluation.attempts, celery_retries + 1)
    if attempts < settings.max_attempts:
        return None
    log.error("evaluation %s failed for good after %s attempts: %s", evaluation_id, attempts, error)
    storage.finish_evaluation(
        session=session,
        evaluation_id=evaluation_id,
        state="failed",
        error_category=storage.INFRASTRUCTURE,
        error_message=f"gave up after {attempts} attempts: {error}",
        public_error_message=(
            f"the service failed {attempts} times to evaluate this submission; it does not count against your quota"
        ),
        infrastructure_failure=True,
    )
    return "failed"


def _run(task: Task, evaluation_id: int) -> str:
    settings = get_settings()
    try:
        report: EvaluationReport = run_evaluation(
            evaluation_id, settings=settings, sessions=_sessions(), worker_id=worker_id()
        )
    except Exception as exc:
        if not isinstance(exc, RetryableError):
            log.exception("evaluation %s: unexpected error; counted as an attempt", evaluation_id)
        with _sessions()() as session:
            ended = requeue_or_give_up(
                session=session,
                settings=settings,
                evaluation_id=evaluation_id,
                celery_retries=task.request.retries,
                error=exc,
            )
        if ended is not None:
            return ended
        log.warning("evaluation %s: %s; retrying", evaluation_id, exc)
        raise task.retry(exc=exc, countdown=min(60, 2**task.request.retries) + os.getpid() % 3) from exc
    log.info("evaluation %s: %s (%s episodes run) %s", evaluation_id, report.state, report.episodes_run, report.message)
    return report.state


@app.task(name=EVALUATE_TASK, bind=True, max_retries=None)  # type: ignore[untyped-decorator]  # celery ships no types
def evaluate(self: Task, evaluation_id: int) -> str:
    """Evaluate a submission (initial run or rerun) on its evaluation set."""
    return _run(self, evaluation_id)


@app.task(name=AUDIT_TASK, bind=True, max_retries=None)  # type: ignore[untyped-decorator]
def audit(self: Task, evaluation_id: int) -> str:
    """Rerun an evaluation's episodes and compare them with the stored ones (queue ``audits``)."""
    return _run(self, evaluation_id)
