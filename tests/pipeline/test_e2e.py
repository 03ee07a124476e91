"""End to end with real processes: Postgres, a private Redis, the Docker sandbox, uvicorn and Celery workers.

1. A student submits with the ``layersched`` CLI and waits; the score, the leaderboard API and the web page agree.
2. A worker is SIGKILLed mid-evaluation; a new worker finishes it once, with the same actions as a clean run.
3. Redis restarts (no persistence) while work is queued; the reconciler sends it again and nothing is lost.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from layersched.server import admin
from layersched.server.config import Settings
from layersched.sim.baselines import BASELINES
from layersched.sim.evalset import evaluate_policy, load_evalset
from layersched.worker.evalsets import register_and_score
from tests.pipeline.conftest import SAMPLE
from tests.server.conftest import create_pg_database, drop_pg_database

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

# A Greedy policy that takes ~5 ms per decision, so a worker can be killed while it runs (1800 decisions).
SLOW_GREEDY = b"""import time
from layersched.sim.baselines import greedy_estimate


def policy(env, task, rng):
    time.sleep(0.005)
    return greedy_estimate(env, task, rng)
"""
GREEDY = b"""from layersched.sim.baselines import greedy_estimate


def policy(env, task, rng):
    return greedy_estimate(env, task, rng)
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(condition: Any, timeout: float, what: str) -> Any:
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

    def start(self, name: str, argv: list[str]) -> None:
        with (self.tmp / f"{name}.log").open("ab") as log:  # the child keeps its own copy of the descriptor
            self.processes[name] = subprocess.Popen(
                argv, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def stop(self, name: str, sig: int = signal.SIGTERM) -> None:
        process = self.processes.pop(name)
        os.killpg(process.pid, sig)  # the whole group: Celery's pool children and the sandbox's helpers
        process.wait(timeout=30)

    def start_worker(self, name: str = "worker") -> None:
        self.start(name, [sys.executable, "-m", "layersched.worker", "--hostname", f"{name}@%h"])

    def start_redis(self) -> None:
        self.start("redis", ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(self.tmp)])
        _wait_for(lambda: _redis_up(self.redis_port), 10, "redis")

    def cli(self, token: str, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        env = {**self.env, "LAYERSCHED_SERVER": self.api_url, "LAYERSCHED_TOKEN": token,
               "LAYERSCHED_CONFIG": str(self.tmp / "cli.json")}
        return subprocess.run(["layersched", *args], env=env, capture_output=True, text=True, timeout=timeout)

    def submission(self, token: str, submission_id: int) -> dict[str, Any]:
        response = httpx.get(f"{self.api_url}/api/v1/submissions/{submission_id}",
                             headers={"Authorization": f"Bearer {token}"}, timeout=10)
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        return data

    def upload(self, token: str, content: bytes, name: str) -> int:
        response = httpx.post(f"{self.api_url}/api/v1/submissions", headers={"Authorization": f"Bearer {token}"},
                              files={"file": ("policy.py", content, "text/x-python")}, data={"name": name},
                              timeout=30)
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


@pytest.fixture
def stack(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed (scripts/bootstrap --system installs it)")
    database = create_pg_database()
    redis_port, api_port = _free_port(), _free_port()
    env = {
        **os.environ,
        "LAYERSCHED_DATABASE_URL": f"postgresql+psycopg://postgres@127.0.0.1:5432/{database}",
        "LAYERSCHED_BROKER_URL": f"redis://127.0.0.1:{redis_port}/0",
        "LAYERSCHED_BUNDLE_DIR": str(tmp_path / "bundles"),
        "LAYERSCHED_BASELINE_CACHE_DIR": str(tmp_path_factory.getbasetemp() / "e2e-baselines"),
        "LAYERSCHED_SANDBOX_BACKEND": "docker",
        "LAYERSCHED_STUCK_TIMEOUT_S": "6",
        "LAYERSCHED_RECONCILE_INTERVAL_S": "1",
        "LAYERSCHED_REQUEUE_AFTER_S": "3",
        "LAYERSCHED_DAILY_QUOTA": "20",
    }
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        **{k.removeprefix("LAYERSCHED_").lower(): v for k, v in env.items() if k.startswith("LAYERSCHED_")},
    )
    admin.upgrade_database(settings=settings)
    register_and_score(path=SAMPLE, settings=settings)
    stack = Stack(tmp_path, env, settings, f"http://127.0.0.1:{api_port}", redis_port)
    try:
        stack.start_redis()
        stack.start("api", [sys.executable, "-m", "uvicorn", "--factory", "layersched.server.app:create_app",
                            "--host", "127.0.0.1", "--port", str(api_port)])
        _wait_for(lambda: _healthy(stack.api_url), 30, "the API")
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


def _participant(stack: Stack, name: str) -> str:
    return admin.add_user(name=name, email=f"{name}@example.org", settings=stack.settings).token


def _expected_traces(bundle: bytes) -> dict[tuple[str, str], str]:
    """What the trusted simulator gives for Greedy with this bundle's policy seeds, in-process."""
    records = evaluate_policy(load_evalset(SAMPLE), BASELINES["Greedy"], bundle_id=hashlib.sha256(bundle).hexdigest())
    return {(r.scenario, r.episode): r.trace_hash for r in records}


def _traces(stack: Stack, organiser: str, submission: dict[str, Any]) -> dict[tuple[str, str], str]:
    evaluation_id = submission["evaluations"][0]["id"]
    response = httpx.get(f"{stack.api_url}/api/v1/admin/evaluations/{evaluation_id}",
                         headers={"Authorization": f"Bearer {organiser}"}, timeout=10)
    response.raise_for_status()
    episodes = response.json()["episodes"]
    return {(e["scenario"], e["episode_id"]): e["trace_hash"] for e in episodes}


def _sandbox_containers() -> list[str]:
    out = subprocess.run(["docker", "ps", "-aq", "--filter", "label=layersched.sandbox"], capture_output=True,
                         text=True, check=True)
    return out.stdout.split()


def test_cli_submission_reaches_the_leaderboard_and_the_page(stack: Stack, tmp_path: Path) -> None:
    stack.start_worker()
    token = _participant(stack, "ada")
    policy = tmp_path / "policy.py"
    policy.write_bytes(GREEDY)
    result = stack.cli(token, "submit", str(policy), "--name", "greedy-copy", "--wait")
    assert result.returncode == 0, result.stderr + stack.log("worker")
    assert "rank 1" in result.stdout + result.stderr

    board = httpx.get(f"{stack.api_url}/api/v1/leaderboard", timeout=10).json()
    ada = [row for row in board["rows"] if row["participant"] == "ada"]
    assert len(ada) == 1 and ada[0]["rank"] == 1 and ada[0]["score"] == pytest.approx(1.0, abs=0.01)
    assert {row["participant"] for row in board["rows"] if row["baseline"]} == set(BASELINES)

    table = stack.cli(token, "leaderboard", "--json")
    assert table.returncode == 0 and json.loads(table.stdout)["rows"][0]["participant"] in {"ada", "Greedy"}
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    page = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'chrome'}",
         "--dump-dom", f"{stack.api_url}/"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    assert "ada" in page and "greedy-copy" in page and "<svg" in page


def test_worker_killed_mid_evaluation_is_finished_once_by_another(stack: Stack) -> None:
    stack.start_worker("first")
    token, organiser = _participant(stack, "kim"), admin.add_user(
        name="olga", email="olga@example.org", role="organiser", settings=stack.settings).token
    submission_id = stack.upload(token, SLOW_GREEDY, "slow greedy")
    _wait_for(lambda: stack.submission(token, submission_id)["progress"]["done"] >= 1, 120, "the first episode")
    stack.stop("first", signal.SIGKILL)
    killed = stack.submission(token, submission_id)
    assert killed["state"] == "running" and killed["progress"]["done"] < killed["progress"]["total"]

    stack.start_worker("second")
    done = _wait_for(
        lambda: (s := stack.submission(token, submission_id))["state"] in ("succeeded", "failed") and s, 180,
        "the evaluation to end",
    )
    assert done["state"] == "succeeded", done["error"]
    assert done["progress"] == {"done": 6, "total": 6}
    evaluation = done["evaluations"][0]
    assert evaluation["sandbox"] == "docker" and evaluation["image_digest"]
    # Exactly once, with the actions an uninterrupted run gives (6 rows, one per episode, traces as in-process).
    assert _traces(stack, organiser, done) == _expected_traces(SLOW_GREEDY)
    # The killed worker's container was swept by the new worker; the new worker removed its own.
    _wait_for(lambda: not _sandbox_containers(), 30, "no sandbox container left")


def test_redis_restart_with_queued_work_loses_nothing(stack: Stack) -> None:
    tokens = [_participant(stack, f"student{i}") for i in range(2)]
    ids = [stack.upload(token, GREEDY, "queued") for token in tokens]
    stack.stop("redis", signal.SIGKILL)  # no persistence: the two queued messages are gone
    stack.start_redis()
    stack.start_worker()
    for token, submission_id in zip(tokens, ids, strict=True):
        done = _wait_for(
            lambda t=token, i=submission_id: (s := stack.submission(t, i))["state"] == "succeeded" and s, 180,
            f"submission {submission_id} after the Redis restart",
        )
        assert done["progress"] == {"done": 6, "total": 6}
    assert "reconciler" in stack.log("worker")
