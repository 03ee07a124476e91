"""Starting a worker process: the Celery worker plus, beside it, the reconciler and the orphan-sandbox sweep.

``layersched worker`` (production, one per core or per host) and ``layersched serve`` (embedded) both come here.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from celery.signals import worker_ready, worker_shutdown

from layersched.server.config import get_settings
from layersched.server.db import make_engine, make_sessionmaker
from layersched.server.queue import QUEUES, CeleryEnqueuer
from layersched.worker.reconcile import Reconciler

log = logging.getLogger(__name__)
_reconciler: Reconciler | None = None


@worker_ready.connect  # type: ignore[untyped-decorator]  # celery ships no types
def _on_ready(**_: Any) -> None:
    global _reconciler
    settings = get_settings()
    try:
        from layersched.worker.docker_backend import sweep_orphans

        removed = sweep_orphans()
        if removed:
            log.warning("removed %d sandbox containers left by a dead worker", removed)
    except Exception as exc:  # no engine here: the process sandbox will be used, nothing to sweep
        log.info("no sandbox sweep (%s)", exc)
    sessions = make_sessionmaker(make_engine(settings.database_url))
    _reconciler = Reconciler(sessions=sessions, settings=settings, enqueuer=CeleryEnqueuer(settings.broker_url))
    _reconciler.start()


@worker_shutdown.connect  # type: ignore[untyped-decorator]
def _on_shutdown(**_: Any) -> None:
    if _reconciler is not None:
        _reconciler.stop()


def run_worker(argv: Sequence[str] = ()) -> None:
    """Run a Celery worker on both queues, one evaluation at a time per process (extra args go to Celery)."""
    from layersched.worker.celery_app import app

    app.worker_main(
        [
            "worker",
            "--queues",
            ",".join(QUEUES),
            "--concurrency",
            "1",
            "--loglevel",
            "INFO",
            "--without-gossip",
            "--without-mingle",
            *argv,
        ]
    )
