"""``layersched serve``: the whole service on one machine, with no external server.

* storage: SQLite in ``--data-dir`` (default ``./var``), migrated to the latest schema at start;
* broker: kombu's SQLAlchemy transport on a second SQLite file (a real, persistent embedded broker);
* a Celery worker in a child process (with the reconciler), the API and web pages in this process (uvicorn);
* sandbox: Docker when an engine and the sandbox image are there, otherwise the process sandbox; the first lines say
  which, and why in plain words (``worker/sandbox/choice.py``);
* the evaluation set ``hidden_seeds/sample.toml`` (or ``LAYERSCHED_EVALSET_PATH``), registered with the six
  baselines scored on it as the leaderboard's reference rows (on every core, the first time for a set and simulator
  version, with a line every tenth of the episodes: ``layersched: baselines 45/150 episodes``).

``--demo`` registers each built-in track's public sample instead, with a phase on each (``worker/demo.py``), creates
a demo organiser and a demo student, prints their tokens, and submits the lab's starter policy as the student (once
per data directory), so the leaderboard shows a ranked entry a few seconds after start.
Settings already present in the environment (``LAYERSCHED_*``) win over these embedded defaults.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from layersched.server.config import get_settings
from layersched.sim.ordered_pool import available_cores
from layersched.worker.demo import demo_phases, demo_sets, demo_users, submit_demo
from layersched.worker.evalsets import progress_for, register_sets, registration_line
from layersched.worker.sandbox.choice import choose_sandbox

log = logging.getLogger(__name__)
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def embedded_environment(data_dir: Path) -> dict[str, str]:
    """The ``LAYERSCHED_*`` defaults of an embedded service rooted at ``data_dir``."""
    data_dir = data_dir.resolve()
    return {
        "LAYERSCHED_DATABASE_URL": f"sqlite:///{data_dir / 'layersched.db'}",
        "LAYERSCHED_BROKER_URL": f"sqla+sqlite:///{data_dir / 'broker.db'}",
        "LAYERSCHED_BUNDLE_DIR": str(data_dir / "bundles"),
        "LAYERSCHED_BASELINE_CACHE_DIR": str(data_dir / "baselines"),
    }


def serve(*, host: str, port: int, data_dir: Path, demo: bool) -> int:
    import uvicorn

    from layersched.server import admin
    from layersched.server.app import create_app
    from layersched.server.db import display_url

    data_dir.mkdir(parents=True, exist_ok=True)
    for key, value in embedded_environment(data_dir).items():
        os.environ.setdefault(key, value)
    get_settings.cache_clear()
    settings = get_settings()
    print(f"layersched: database {display_url(settings.database_url)} (schema brought up to date)", flush=True)
    admin.upgrade_database(settings=settings)
    cores = available_cores()
    if demo:  # each track's sample, none current: the demo's phases name them (worker/demo.py)
        registered = register_sets(demo_sets(), settings=settings, workers=cores, progress=progress_for(cores))
    else:  # LAYERSCHED_EVALSET_PATH as the current set: the default phase `main` scores on it
        registered = register_sets(
            [settings.evalset_path], settings=settings, current=True, workers=cores, progress=progress_for(cores)
        )
    # The extra sets are for phases besides the default one (admin phase create --evalset, a challenge file).
    shown = {r.path for r in registered}
    extras = [path for path in settings.extra_evalset_paths if path.resolve() not in shown]
    registered += register_sets(extras, settings=settings, workers=cores, progress=progress_for(cores))
    for registration in registered:
        print(f"layersched: {registration_line(registration)}", flush=True)
    if demo:
        for change in demo_phases(settings):
            print(f"layersched: demo: {change}", flush=True)
    choice = choose_sandbox(settings)
    print(f"layersched: {choice.describe()}", flush=True)
    tokens = demo_users(settings) if demo else {}
    worker_env = os.environ.copy()
    # The worker uses the sandbox announced above, rather than deciding again and logging its own reason.
    worker_env["LAYERSCHED_SANDBOX_BACKEND"] = choice.backend
    # Its own session, so that Ctrl-C reaches this process alone, which then stops the worker in order (the
    # terminal's SIGINT to every process at once made Celery's pool children die by signal, noisily); and a
    # parent-death signal, so that the worker does not outlive this process if it is killed.
    worker = subprocess.Popen(
        [sys.executable, "-m", "layersched.worker", "--no-banner"],
        env=worker_env,
        start_new_session=True,
        preexec_fn=_terminate_with_parent,
    )
    url = f"http://{host}:{port}"
    if demo:
        threading.Thread(target=submit_demo, args=(url, tokens["student"]), daemon=True).start()
    print(f"layersched: API and leaderboard at {url}/ (OpenAPI at {url}/docs); Ctrl-C stops", flush=True)
    try:
        uvicorn.run(create_app(settings), host=host, port=port, log_level="warning")
    finally:
        print("layersched: stopping (the worker finishes the evaluation it is running, for up to 20 s)", flush=True)
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        print("layersched: stopped", flush=True)
    return 0


def _terminate_with_parent() -> None:
    """In the worker's child, before exec: SIGTERM when the process that started it dies (Linux prctl)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
