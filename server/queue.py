"""Sending evaluations to the workers by Celery task *name*: the server never imports layersched.worker.

``Enqueuer`` is anything callable as ``enqueuer(task_name, args=[evaluation_id], queue=name)``; the app takes one
so that tests can capture the calls. The database stays the source of truth: if the broker is down when a
submission arrives, the evaluation stays ``queued`` and the worker's reconciler sends it again.
"""

from __future__ import annotations

import logging
from typing import Protocol
from urllib.parse import urlsplit

from celery import Celery
from kombu.connection import Connection
from kombu.exceptions import ChannelError, OperationalError

from layersched.server.models import Evaluation

log = logging.getLogger(__name__)

EVALUATE_TASK, EVALUATIONS_QUEUE = "layersched.evaluate", "evaluations"
AUDIT_TASK, AUDITS_QUEUE = "layersched.audit", "audits"
QUEUES = (EVALUATIONS_QUEUE, AUDITS_QUEUE)


class Enqueuer(Protocol):
    def __call__(self, task_name: str, *, args: list[int], queue: str) -> None: ...


class CeleryEnqueuer:
    """Publishes with ``Celery.send_task``; the Celery app is made on first use."""

    def __init__(self, broker_url: str) -> None:
        self.broker_url = broker_url
        self._app: Celery | None = None

    def __call__(self, task_name: str, *, args: list[int], queue: str) -> None:
        if self._app is None:
            self._app = Celery("layersched-server", broker=self.broker_url, set_as_current=False)
            self._app.conf.task_publish_retry_policy = {"max_retries": 2, "interval_start": 0, "interval_step": 0.5}
        self._app.send_task(task_name, args=args, queue=queue)


def task_for(evaluation: Evaluation) -> tuple[str, str]:
    """(task name, queue) for an evaluation: audits go to their own queue so they never delay students."""
    return (AUDIT_TASK, AUDITS_QUEUE) if evaluation.kind == "audit" else (EVALUATE_TASK, EVALUATIONS_QUEUE)


def enqueue(enqueuer: Enqueuer, evaluation: Evaluation) -> bool:
    """Send the evaluation; False (logged) if the broker cannot be reached: the reconciler will resend it."""
    name, queue = task_for(evaluation)
    try:
        enqueuer(name, args=[evaluation.id], queue=queue)
    except OperationalError as exc:
        log.warning("evaluation %s stays queued: the broker refused it (%s)", evaluation.id, exc)
        return False
    return True


def _connection(broker_url: str, timeout: float) -> Connection:
    """A connection whose every wait is bounded by ``timeout``: connecting, and for Redis each read and write too
    (its ``socket_timeout``, which kombu's ``connect_timeout`` does not set). Without the latter a broker that
    accepts connections and never answers held a probe, and the API's thread running it, for ever. (The embedded
    broker of ``layersched serve``, a SQLite file, takes no socket options: its transport hands them to SQLAlchemy.)"""
    bounded = {"socket_connect_timeout": timeout, "socket_timeout": timeout}
    options = bounded if urlsplit(broker_url).scheme.split("+")[0] in ("redis", "rediss") else {}
    return Connection(broker_url, connect_timeout=timeout, transport_options=options)  # type: ignore[no-untyped-call]


def ping_broker(broker_url: str, *, timeout: float = 2.0) -> None:
    """Raise OperationalError (or OSError) if the broker cannot be reached, or does not answer, within ``timeout``
    seconds (each wait; a retry or two may add as many)."""
    with _connection(broker_url, timeout) as connection:
        connection.ensure_connection(max_retries=1, timeout=timeout)


def queue_depths(broker_url: str, *, timeout: float = 2.0) -> dict[str, int]:
    """Messages waiting in each queue (a queue nobody declared yet counts as empty)."""
    depths: dict[str, int] = {}
    with _connection(broker_url, timeout) as connection:
        connection.ensure_connection(max_retries=1, timeout=timeout)
        try:
            channel = connection.default_channel
            for queue in QUEUES:
                try:
                    depths[queue] = channel.queue_declare(queue=queue, passive=True).message_count
                except ChannelError:
                    depths[queue] = 0
        except connection.connection_errors as exc:  # Redis's own (a read timed out), as the connect's are
            raise OperationalError(f"the broker did not answer: {exc}") from exc
    return depths
