"""Starting a worker process: the Celery worker plus, beside it, the reconciler and the orphan-sandbox sweep.

``layersched worker`` (production, one per core or per host) and ``layersched serve`` (embedded) both come here.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Sequence
from typing import Any

from celery.signals import worker_process_init, worker_process_shutdown, worker_ready, worker_shutdown

from layersched.server.config import get_settings
from layersched.server.db import make_engine, make_sessionmaker
from layersched.server.queue import QUEUES, CeleryEnqueuer
from layersched.worker.reconcile import Reconciler
from layersched.worker.sandbox.choice import engine_address

log = logging.getLogger(__name__)
_reconciler: Reconciler | None = None


@worker_ready.connect  # type: ignore[untyped-decorator]  # celery ships no types
def _on_ready(**_: Any) -> None:
    global _reconciler
    settings = get_settings()
    if os.geteuid() == 0:
        log.info("running as root, on purpose: each sandbox's channel socket is given to the sandbox's user alone")
    if settings.sandbox_backend != "process":  # with the process sandbox there is no engine to sweep
        try:
            from layersched.worker.sandbox.docker_backend import sweep_orphans

            removed = sweep_orphans()
            if removed:
                log.warning("removed %d sandbox containers left by a dead worker", removed)
        except Exception:  # no engine here: the process sandbox will be used, nothing to sweep
            log.info("no sandbox sweep: no Docker engine answers at %s", engine_address())
    sessions = make_sessionmaker(make_engine(settings.database_url))
    _reconciler = Reconciler(sessions=sessions, settings=settings, enqueuer=CeleryEnqueuer(settings.broker_url))
    _reconciler.start()


@worker_shutdown.connect  # type: ignore[untyped-decorator]
def _on_shutdown(**_: Any) -> None:
    if _reconciler is not None:
        _reconciler.stop()


@worker_process_init.connect  # type: ignore[untyped-decorator]
def _start_sandbox_pool(**_: Any) -> None:
    """Each pool process (where evaluations run) keeps its own warm sandboxes; starting them is left to a
    background thread, so this returns at once (Celery gives process init a few seconds)."""
    settings = get_settings()
    if settings.sandbox_pool_size == 0 or settings.sandbox_backend == "process":
        return
    from layersched.worker.pipeline import sandbox_limits
    from layersched.worker.sandbox.pool import SandboxPool, install

    install(SandboxPool(size=settings.sandbox_pool_size, limits=sandbox_limits(settings), image=settings.sandbox_image))


@worker_process_shutdown.connect  # type: ignore[untyped-decorator]
def _stop_sandbox_pool(**_: Any) -> None:
    from layersched.worker.sandbox.pool import uninstall

    pool = uninstall()
    if pool is not None:
        pool.close()


def run_worker(argv: Sequence[str] = (), *, banner: bool = True) -> None:
    """Run a Celery worker on both queues, one evaluation at a time per process (extra args go to Celery).

    ``banner=False`` (``layersched serve``) leaves out Celery's start banner: serve prints its own lines.
    """
    from celery.exceptions import SecurityWarning

    from layersched.worker.celery_app import app

    if os.geteuid() == 0:
        # Celery warns against root in a page-long banner; here root is deliberate: only root can give each
        # sandbox's channel socket to the sandbox's user alone (worker/sandbox/run_dirs.py). _on_ready says so in a
        # line.
        warnings.filterwarnings("ignore", category=SecurityWarning)
    app.worker_main(
        [
            *([] if banner else ["--quiet"]),
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
