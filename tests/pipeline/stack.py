"""The service as separate processes (Postgres, a private Redis, uvicorn, Celery workers), for tests and benchmarks."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from layersched.server import admin
from layersched.server.config import Settings
from layersched.worker.evalsets import register_and_score
from tests.server.conftest import create_pg_database, drop_pg_database

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "hidden_seeds" / "sample.toml"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(condition: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


@dataclass
class Stack:
    """The service as separate processes, like a production deployment on one host."""

    tmp: Path
    env: dict[str, str]
    settings: Settings
    api_url: str
    redis_port: int
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self, name: str, argv: list[str], **env: str) -> None:
        """Start ``argv`` with the service's environment (and ``env``), its output in ``name``.log."""
        with (self.tmp / f"{name}.log").open("ab") as log:  # the child keeps its own copy of the descriptor
            self.processes[name] = subprocess.Popen(
                argv, env={**self.env, **env}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def stop(self, name: str, sig: int = signal.SIGTERM) -> None:
        process = self.processes.pop(name)
        os.killpg(process.pid, sig)  # the whole group: Celery's pool children and the sandbox's helpers
        process.wait(timeout=30)

    def start_worker(self, name: str = "worker") -> None:
        self.start(name, [sys.executable, "-m", "layersched.worker", "--hostname", f"{name}@%h"])

    def start_redis(self) -> None:
        self.start(
            "redis",
            [
                "redis-server",
                "--port",
                str(self.redis_port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.tmp),
            ],
        )
        wait_for(lambda: _redis_up(self.redis_port), 10, "redis")

    def cli(self, token: str, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        env = {
            **self.env,
            "LAYERSCHED_SERVER": self.api_url,
            "LAYERSCHED_TOKEN": token,
            "LAYERSCHED_CONFIG": str(self.tmp / "cli.json"),
        }
        return subprocess.run(["layersched", *args], env=env, capture_output=True, text=True, timeout=timeout)

    def submission(self, token: str, submission_id: int) -> dict[str, Any]:
        response = httpx.get(
            f"{self.api_url}/api/v1/submissions/{submission_id}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        return data

    def upload(self, token: str, content: bytes, name: str) -> int:
        response = httpx.post(
            f"{self.api_url}/api/v1/submissions",
            headers={"Authorization": f"Bearer {token}"},
            files={"file": ("policy.py", content, "text/x-python")},
            data={"name": name},
            timeout=30,
        )
        assert response.status_code == 201, response.text
        return int(response.json()["id"])

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text(errors="replace")


def _redis_up(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _service_env(
    tmp_path: Path, baseline_cache: Path, database: str, redis_port: int, **overrides: str
) -> dict[str, str]:
    return {
        **os.environ,
        "LAYERSCHED_DATABASE_URL": f"postgresql+psycopg://postgres@127.0.0.1:5432/{database}",
        "LAYERSCHED_BROKER_URL": f"redis://127.0.0.1:{redis_port}/0",
        "LAYERSCHED_BUNDLE_DIR": str(tmp_path / "bundles"),
        "LAYERSCHED_BASELINE_CACHE_DIR": str(baseline_cache),
        "LAYERSCHED_SANDBOX_BACKEND": "docker",
        "LAYERSCHED_STUCK_TIMEOUT_S": "6",
        "LAYERSCHED_RECONCILE_INTERVAL_S": "1",
        "LAYERSCHED_REQUEUE_AFTER_S": "3",
        "LAYERSCHED_DAILY_QUOTA": "20",
        "LAYERSCHED_NOTIFY_INTERVAL_S": "0.5",  # webhooks are posted within the test's patience
        **overrides,
    }


def _settings(env: dict[str, str]) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        **{k.removeprefix("LAYERSCHED_").lower(): v for k, v in env.items() if k.startswith("LAYERSCHED_")},
    )


def start_api(stack: Stack, name: str = "api") -> None:
    """uvicorn on the app factory, as compose's ``api`` service starts it; returns once /healthz answers."""
    port = int(stack.api_url.rsplit(":", 1)[1])
    stack.start(
        name,
        [sys.executable, "-m", "uvicorn", "--factory", "layersched.server.app:create_app", "--host", "127.0.0.1",
         "--port", str(port)],
    )  # fmt: skip
    wait_for(lambda: _healthy(stack.api_url), 30, "the API")


@contextmanager
def running_stack(
    tmp_path: Path,
    baseline_cache: Path,
    evalset: Path = SAMPLE,
    *,
    process_env: dict[str, str] | None = None,
    **overrides: str,
) -> Iterator[Stack]:
    """Start Redis and the API against a fresh Postgres database, ``evalset`` current; the caller starts workers.

    ``overrides`` are settings (``LAYERSCHED_...``) for this process and the service's; ``process_env`` is for the
    service's processes only (values in their environment's own syntax, a JSON list say)."""

    def prepare(stack: Stack) -> None:
        admin.upgrade_database(settings=stack.settings)
        register_and_score(path=evalset, settings=stack.settings)

    with _service(tmp_path, baseline_cache, prepare, process_env or {}, overrides) as stack:
        yield stack


@contextmanager
def production_stack(tmp_path: Path, baseline_cache: Path, **overrides: str) -> Iterator[Stack]:
    """The deployment as README's production sequence has it, started the way compose starts it: a fresh Postgres
    database brought up to date by ``alembic upgrade head`` (compose's ``migrate``), a private Redis and the API
    (uvicorn on the app factory). Nothing is registered and nobody exists: the caller does the rest through the CLI
    (``layersched admin user add --bootstrap``, ``layersched evalset register``, ``layersched worker``)."""

    def migrate(stack: Stack) -> None:
        argv = [sys.executable, "-m", "alembic", "upgrade", "head"]
        migrated = subprocess.run(argv, env=stack.env, cwd=REPO, capture_output=True, text=True)
        if migrated.returncode != 0:
            raise RuntimeError(f"alembic upgrade head failed: {migrated.stderr[-2000:]}")

    with _service(tmp_path, baseline_cache, migrate, {}, overrides) as stack:
        yield stack


@contextmanager
def _service(
    tmp_path: Path,
    baseline_cache: Path,
    prepare: Callable[[Stack], None],
    process_env: dict[str, str],
    overrides: dict[str, str],
) -> Iterator[Stack]:
    """A fresh Postgres database, ``prepare``d; then a private Redis and the API. Everything stops at the end and the
    database is dropped."""
    if shutil.which("redis-server") is None:
        raise RuntimeError("redis-server is not installed (scripts/bootstrap --system installs it)")
    tmp_path.mkdir(parents=True, exist_ok=True)
    database = create_pg_database()
    redis_port, api_port = free_port(), free_port()
    env = _service_env(tmp_path, baseline_cache, database, redis_port, **overrides)
    stack = Stack(tmp_path, {**env, **process_env}, _settings(env), f"http://127.0.0.1:{api_port}", redis_port)
    try:
        prepare(stack)
        stack.start_redis()
        start_api(stack)
        yield stack
    finally:
        for name in list(stack.processes):
            stack.stop(name, signal.SIGKILL)
        drop_pg_database(database)


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
