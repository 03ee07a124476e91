"""Fixtures of the SDK tests: an isolated config file, and a live server (the real app on uvicorn, SQLite, in a
thread) with a stand-in worker that drives evaluations through the server's storage calls, as the real one does."""

from __future__ import annotations

import importlib.util
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

# The server's side (FastAPI, SQLAlchemy, pydantic) is the `server` extra: the student-side run on the oldest Python
# (tests/test_oldest_python.py) installs the package with its gym extra only, as a student does.
needs_server = pytest.mark.skipif(importlib.util.find_spec("fastapi") is None, reason="needs the server extra")


POLICY = "import numpy as np\n\n\ndef policy(env, task, rng):\n    return int(np.argmax(env.mask(task)))\n"
SCENARIOS = [
    {"name": "lab-300", "weight": 1.0, "public_episodes": 2},
    {"name": "official-5n", "weight": 1.0, "public_episodes": 2},
]


@pytest.fixture(autouse=True)
def isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test reads or writes the real user config; the env overrides start unset."""
    path = tmp_path / "config" / "config.json"
    monkeypatch.setenv("LAYERSCHED_CONFIG", str(path))
    monkeypatch.delenv("LAYERSCHED_SERVER", raising=False)
    monkeypatch.delenv("LAYERSCHED_TOKEN", raising=False)
    return path


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "first_fit.py"
    path.write_text(POLICY)
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Worker:
    """Stands in for Celery and the sandbox: completes every enqueued evaluation through storage calls."""

    settings: Any
    fail: bool = False
    image_digest: str = "sha256:" + "ab" * 32
    # The overall public (and private) score of each evaluation in turn; 0.98 once these are used up.
    overall: list[float] = field(default_factory=list)
    calls: list[tuple[str, list[int], str]] = field(default_factory=list)
    _pending: list[int] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, task_name: str, *, args: list[int], queue: str) -> None:
        with self._lock:
            self.calls.append((task_name, args, queue))
            self._pending.extend(args)

    def run_pending(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        for evaluation_id in pending:
            self.complete(evaluation_id)

    def complete(self, evaluation_id: int) -> None:
        from layersched.server import storage
        from layersched.server.db import make_engine, make_sessionmaker, session_scope

        engine = make_engine(self.settings.database_url)
        try:
            factory = make_sessionmaker(engine)
            with session_scope(factory) as session:
                storage.start_evaluation(
                    session=session,
                    evaluation_id=evaluation_id,
                    worker_id="test-worker",
                    total=2,
                    sim_version="1.0.0",
                    image_digest=self.image_digest,
                    sandbox="process",
                )
            for i, scenario in enumerate(("lab-300", "official-5n")):
                time.sleep(0.2)  # long enough for the CLI to see progress
                with session_scope(factory) as session:
                    storage.record_episode_result(
                        session=session,
                        evaluation_id=evaluation_id,
                        scenario=scenario,
                        episode_id="seed0",
                        split="public",
                        hidden=False,
                        status="ok" if not self.fail else "invalid_action",
                        message="" if not self.fail else "step 3: policy returned node 11, outside 0..9",
                        metrics={"mean_completion": 60.0 + i, "p95_completion": 90.0, "cloud_share": 0.0},
                        primary_value=60.0 + i,
                        trace_hash="f" * 64,
                        n_actions=300,
                        stdout=f"hello from {scenario}",
                        stderr="",
                    )
            with session_scope(factory) as session:
                if self.fail:
                    storage.finish_evaluation(
                        session=session,
                        evaluation_id=evaluation_id,
                        state="failed",
                        error_category="invalid_action",
                        error_message="step 3: policy returned node 11, outside 0..9",
                        # The episode is not hidden: the participant reads the message as the organisers do.
                        public_error_message="step 3: policy returned node 11, outside 0..9",
                        infrastructure_failure=False,
                    )
                else:
                    overall = self.overall.pop(0) if self.overall else 0.98
                    score = {
                        "overall": overall,
                        "ci_low": round(overall - 0.03, 6),
                        "ci_high": round(overall + 0.03, 6),
                        "per_scenario": {"lab-300": round(overall - 0.01, 6), "official-5n": round(overall + 0.01, 6)},
                    }
                    storage.finish_evaluation(
                        session=session,
                        evaluation_id=evaluation_id,
                        state="succeeded",
                        score_public=score,
                        score_private=score,
                    )
        finally:
            engine.dispose()


@dataclass
class LiveServer:
    url: str
    settings: Any
    worker: Worker
    tokens: dict[str, str]
    user_ids: dict[str, int]


@pytest.fixture
def server_settings() -> dict[str, Any]:
    """Settings the live server takes besides the defaults below; a test parametrizes this name to change them."""
    return {}


@pytest.fixture
def live_server(tmp_path: Path, server_settings: dict[str, Any]) -> Iterator[LiveServer]:
    """The real app (``create_app``) served by uvicorn on 127.0.0.1 with a fresh migrated SQLite database (or the
    database ``server_settings`` names)."""
    uvicorn = pytest.importorskip("uvicorn")
    from layersched.server.admin import add_user, register_evalset, upgrade_database
    from layersched.server.app import create_app
    from layersched.server.config import Settings

    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        broker_url="redis://127.0.0.1:1/0",  # never used: the worker stand-in replaces Celery
        bundle_dir=tmp_path / "bundles",
        **{
            "database_url": f"sqlite:///{tmp_path / 'db' / 'layersched.db'}",
            "daily_quota": 2,
            "max_in_flight": 2,
            **server_settings,
        },
    )
    upgrade_database(settings=settings)
    register_evalset(
        name="sample", commitment="c" * 64, path="hidden_seeds/sample.toml", scenarios=SCENARIOS, settings=settings
    )
    tokens, ids = {}, {}
    for name, role in (("alice", "participant"), ("bob", "participant"), ("olga", "organiser")):
        created = add_user(name=name, email=f"{name}@example.org", role=role, settings=settings)
        tokens[name], ids[name] = created.token, created.id
    worker = Worker(settings)
    app = create_app(settings, enqueuer=worker)
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", ws="none", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield LiveServer(f"http://127.0.0.1:{port}", settings, worker, tokens, ids)
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def worker_thread(live_server: LiveServer) -> Iterator[Worker]:
    """Runs the worker stand-in in the background while a test follows an evaluation."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            live_server.worker.run_pending()
            time.sleep(0.05)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    yield live_server.worker
    stop.set()
    thread.join(timeout=10)


def run_sql(server: LiveServer, *statements: tuple[str, dict[str, Any]]) -> None:
    """Write straight into the live server's database (what the API refuses now, as if stored before)."""
    from sqlalchemy import text

    from layersched.server.db import make_engine

    engine = make_engine(server.settings.database_url)
    try:
        with engine.begin() as conn:
            for statement, values in statements:
                conn.execute(text(statement), values)
    finally:
        engine.dispose()
