"""The reconciler: the database is the truth, the broker only a hint. Run periodically by every worker.

Two ways work gets lost, and what is done about each:

* A worker dies (SIGKILL, OOM, host lost) while an evaluation is ``running``: its heartbeat stops. After
  ``stuck_timeout_s`` without one, the evaluation goes back to ``queued`` and is sent again; the next worker skips
  the episodes already recorded. After ``max_attempts`` starts it fails for good with the reason, as the service's
  failure (the participant's quota is given back).
* The broker loses its messages (Redis restarted without persistence): evaluations stay ``queued`` while the queue is
  empty. When the queue of their kind is empty but some have waited longer than ``requeue_after_s``, they are sent
  again. A duplicate message is harmless: a worker that receives one for a finished or live evaluation exits.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import threading
from dataclasses import dataclass, field

from kombu.exceptions import OperationalError
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from layersched.server import storage
from layersched.server.config import Settings
from layersched.server.models import Evaluation, utcnow
from layersched.server.queue import Enqueuer, enqueue, queue_depths, task_for
from layersched.server.storage.queue_view import beat, forget_worker

log = logging.getLogger(__name__)


@dataclass
class ReconcileReport:
    requeued_stale: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    resent_lost: list[int] = field(default_factory=list)


def reconcile_once(
    *, session: Session, settings: Settings, enqueuer: Enqueuer, now: dt.datetime | None = None
) -> ReconcileReport:
    now = now or utcnow()
    report = ReconcileReport()
    stale = storage.list_stale_evaluations(
        session=session, now=now, timeout=dt.timedelta(seconds=settings.stuck_timeout_s)
    )
    for evaluation in stale:
        if evaluation.attempts >= settings.max_attempts:
            continue  # expired below, with the reason
        if storage.requeue_evaluation(session=session, evaluation_id=evaluation.id) is not None:
            enqueue(enqueuer, evaluation)
            report.requeued_stale.append(evaluation.id)
    expired = storage.expire_stuck_evaluations(
        session=session, now=now, timeout=dt.timedelta(seconds=settings.stuck_timeout_s)
    )
    report.failed.extend(e.id for e in expired)

    waiting = list(
        session.scalars(
            select(Evaluation).where(
                Evaluation.state == "queued",
                Evaluation.created_at < now - dt.timedelta(seconds=settings.requeue_after_s),
            )
        )
    )
    if waiting:
        try:
            depths = queue_depths(settings.broker_url)
        except (OperationalError, OSError) as exc:
            log.warning("reconciler: broker unreachable (%s); %d queued evaluations wait", exc, len(waiting))
            return report
        for evaluation in waiting:
            queue_empty = depths.get(task_for(evaluation)[1], 0) == 0
            if queue_empty and evaluation.id not in report.requeued_stale and enqueue(enqueuer, evaluation):
                report.resent_lost.append(evaluation.id)
    if report.requeued_stale or report.failed or report.resent_lost:
        log.warning("reconciler: %s", report)
    return report


class Reconciler(threading.Thread):
    """Runs ``reconcile_once`` every ``settings.reconcile_interval_s`` until ``stop()``, and writes the worker's
    heartbeat (``worker_heartbeats``: the queue's estimates, the analytics page and the no-worker alert read them)
    when it starts and on every pass."""

    def __init__(
        self, *, sessions: sessionmaker[Session], settings: Settings, enqueuer: Enqueuer, worker_id: str | None = None
    ) -> None:
        super().__init__(name="layersched-reconciler", daemon=True)
        self.sessions, self.settings, self.enqueuer = sessions, settings, enqueuer
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}"
        self._stop_event = threading.Event()

    def _beat(self) -> None:
        try:
            with self.sessions() as session:
                beat(session=session, worker_id=self.worker_id, now=utcnow())
        except Exception:  # a missed heartbeat only makes the worker look gone for a while; it is logged
            log.exception("worker heartbeat not written")

    def run(self) -> None:
        self._beat()
        while not self._stop_event.wait(self.settings.reconcile_interval_s):
            self._beat()
            try:
                with self.sessions() as session:
                    reconcile_once(session=session, settings=self.settings, enqueuer=self.enqueuer)
            except Exception:  # the reconciler must outlive a database hiccup; the failure is logged in full
                log.exception("reconciler pass failed; retrying in %s s", self.settings.reconcile_interval_s)

    def stop(self) -> None:
        self._stop_event.set()
        try:
            with self.sessions() as session:
                forget_worker(session=session, worker_id=self.worker_id)
        except Exception:  # the heartbeat goes stale by itself
            log.exception("worker heartbeat not removed")
