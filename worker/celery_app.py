"""The Celery application of the workers, configured from the one ``Settings`` object.

Reliability settings, and why:

* ``task_acks_late`` + ``task_reject_on_worker_lost``: a message is acknowledged only after the evaluation ended, so
  a worker killed mid-evaluation leaves it with the broker, which hands it to another worker.
* ``visibility_timeout`` (Redis) longer than the longest evaluation: otherwise Redis would redeliver a message
  that is still being worked on. A worker that dies is noticed sooner by the reconciler (heartbeats), not by this.
* ``worker_prefetch_multiplier = 1``: each worker process holds one evaluation at a time; the others stay in the
  queue for idle workers.
* Separate queues: ``evaluations`` for students' work and ``audits`` for organisers', so an audit never delays them.
"""

from __future__ import annotations

from celery import Celery

from layersched.server.config import Settings, get_settings
from layersched.server.queue import AUDIT_TASK, AUDITS_QUEUE, EVALUATE_TASK, EVALUATIONS_QUEUE
from layersched.server.tracks import load_tracks


def make_celery(settings: Settings) -> Celery:
    # The tracks the settings add, known before the pool forks (its processes inherit them): an evaluation set on one
    # of them cannot be loaded, nor its episodes run, without it.
    load_tracks(settings.track_modules)
    # ``include``: the worker imports the task module at start (importing it here would be circular).
    app = Celery("layersched", broker=settings.broker_url, include=["layersched.worker.tasks"], set_as_current=True)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        task_serializer="json",
        accept_content=["json"],
        task_routes={EVALUATE_TASK: {"queue": EVALUATIONS_QUEUE}, AUDIT_TASK: {"queue": AUDITS_QUEUE}},
        task_time_limit=settings.task_time_limit_s,
        task_soft_time_limit=settings.task_time_limit_s - 30,
        # Redis only: other transports (the embedded SQLAlchemy one) reject the option.
        broker_transport_options=(
            {"visibility_timeout": settings.visibility_timeout_s} if settings.broker_url.startswith("redis") else {}
        ),
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
    )
    return app


app = make_celery(get_settings())
