"""End to end with real processes: Postgres, a private Redis, the Docker sandbox, uvicorn and Celery workers.

1. A student submits with the ``layersched`` CLI and waits; the score, the leaderboard API and the web page agree.
2. A worker is SIGKILLed mid-evaluation; a new worker finishes it once, with the same actions as a clean run.
3. Redis restarts (no persistence) while work is queued; the reconciler sends it again and nothing is lost.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from layersched.server import admin
from layersched.sim.evalset import evaluate_policy, load_evalset
from layersched.sim.tracks.layers_v1.baselines import BASELINES
from tests.pipeline.stack import SAMPLE, Stack, running_stack, wait_for
from tests.server.http_receiver import Receiver, http_receiver

pytestmark = [
    pytest.mark.docker,
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.slow,
    pytest.mark.usefixtures("sandbox_image"),
]

# A Greedy policy that takes ~5 ms per decision, so a worker can be killed while it runs (1800 decisions).
SLOW_GREEDY = b"""import time
from layersched.sim.tracks.layers_v1.baselines import greedy_estimate


def policy(env, task, rng):
    time.sleep(0.005)
    return greedy_estimate(env, task, rng)
"""
GREEDY = b"""from layersched.sim.tracks.layers_v1.baselines import greedy_estimate


def policy(env, task, rng):
    return greedy_estimate(env, task, rng)
"""


@pytest.fixture
def stack(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path, tmp_path_factory.getbasetemp() / "e2e-baselines") as running:
        yield running


def _participant(stack: Stack, name: str) -> str:
    return admin.add_user(name=name, email=f"{name}@example.org", settings=stack.settings).token


def _expected_traces(bundle: bytes) -> dict[tuple[str, str], str]:
    """What the trusted simulator gives for Greedy with this bundle's policy seeds, in-process."""
    records = evaluate_policy(load_evalset(SAMPLE), BASELINES["Greedy"], bundle_id=hashlib.sha256(bundle).hexdigest())
    return {(r.scenario, r.episode): r.trace_hash for r in records}


def _traces(stack: Stack, organiser: str, submission: dict[str, Any]) -> dict[tuple[str, str], str]:
    evaluation_id = submission["evaluations"][0]["id"]
    response = httpx.get(
        f"{stack.api_url}/api/v1/admin/evaluations/{evaluation_id}",
        headers={"Authorization": f"Bearer {organiser}"},
        timeout=10,
    )
    response.raise_for_status()
    episodes = response.json()["episodes"]
    return {(e["scenario"], e["episode_id"]): e["trace_hash"] for e in episodes}


def _sandbox_containers() -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-aq", "--filter", "label=layersched.sandbox"], capture_output=True, text=True, check=True
    )
    return out.stdout.split()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with http_receiver() as record:
        yield record


def test_cli_submission_reaches_the_leaderboard_and_the_page(stack: Stack, receiver: Receiver, tmp_path: Path) -> None:
    stack.start_worker()
    token = _participant(stack, "ada")
    organiser = admin.add_user(name="olga", email="olga@example.org", role="organiser", settings=stack.settings).token
    hook = stack.cli(organiser, "admin", "webhook", "add", f"{receiver.url}/hook", "--events", "evaluation")
    assert hook.returncode == 0, hook.stderr
    policy = tmp_path / "policy.py"
    policy.write_bytes(GREEDY)
    result = stack.cli(token, "submit", str(policy), "--name", "greedy-copy", "--wait")
    assert result.returncode == 0, result.stderr + stack.log("worker")
    assert "rank 1" in result.stdout + result.stderr
    # The worker's result reached the webhook through the API's notifier (the pipeline only wrote the outbox).
    wait_for(lambda: bool(receiver.received), timeout=60, what="the webhook's notification")
    (path, posted), *_ = receiver.received
    assert path == "/hook" and posted["event"] == "evaluation.succeeded"
    assert posted["submission"]["name"] == "greedy-copy" and posted["public_score"] == pytest.approx(1.0, abs=0.01)
    analytics = httpx.get(
        f"{stack.api_url}/api/v1/admin/analytics", headers={"Authorization": f"Bearer {organiser}"}, timeout=10
    ).json()
    assert [w["alive"] for w in analytics["workers"]] == [True]  # the worker's reconciler beats

    board = httpx.get(f"{stack.api_url}/api/v1/leaderboard", timeout=10).json()
    ada = [row for row in board["rows"] if row["participant"] == "ada"]
    assert len(ada) == 1 and ada[0]["rank"] == 1 and ada[0]["score"] == pytest.approx(1.0, abs=0.01)
    assert {row["participant"] for row in board["rows"] if row["baseline"]} == set(BASELINES)

    table = stack.cli(token, "leaderboard", "--json")
    assert table.returncode == 0 and json.loads(table.stdout)["rows"][0]["participant"] in {"ada", "Greedy"}
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    page = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'chrome'}",
            "--dump-dom",
            f"{stack.api_url}/",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "ada" in page and "greedy-copy" in page and "<svg" in page

    # The organiser audits it: a new container replays every episode and must reproduce every action.
    submission_id = board["rows"][[r["participant"] for r in board["rows"]].index("ada")]["submission_id"]
    audit = stack.cli(organiser, "admin", "audit", str(submission_id))
    assert audit.returncode == 0, audit.stdout + audit.stderr + stack.log("worker")
    assert ": match" in audit.stdout


def test_worker_killed_mid_evaluation_is_finished_once_by_another(stack: Stack) -> None:
    stack.start_worker("first")
    token, organiser = (
        _participant(stack, "kim"),
        admin.add_user(name="olga", email="olga@example.org", role="organiser", settings=stack.settings).token,
    )
    submission_id = stack.upload(token, SLOW_GREEDY, "slow greedy")
    wait_for(lambda: stack.submission(token, submission_id)["progress"]["done"] >= 1, 120, "the first episode")
    stack.stop("first", signal.SIGKILL)
    killed = stack.submission(token, submission_id)
    assert killed["state"] == "running" and killed["progress"]["done"] < killed["progress"]["total"]

    stack.start_worker("second")
    done = wait_for(
        lambda: (s := stack.submission(token, submission_id))["state"] in ("succeeded", "failed") and s,
        180,
        "the evaluation to end",
    )
    assert done["state"] == "succeeded", done["error"]
    assert done["progress"] == {"done": 6, "total": 6}
    evaluation = done["evaluations"][0]
    assert evaluation["sandbox"] == "docker" and evaluation["image_digest"]
    # Exactly once, with the actions an uninterrupted run gives (6 rows, one per episode, traces as in-process).
    assert _traces(stack, organiser, done) == _expected_traces(SLOW_GREEDY)
    # The killed worker's container was swept by the new worker; the new worker removed its own.
    wait_for(lambda: not _sandbox_containers(), 30, "no sandbox container left")


def test_redis_restart_with_queued_work_loses_nothing(stack: Stack) -> None:
    tokens = [_participant(stack, f"student{i}") for i in range(2)]
    ids = [stack.upload(token, GREEDY, "queued") for token in tokens]
    stack.stop("redis", signal.SIGKILL)  # no persistence: the two queued messages are gone
    stack.start_redis()
    stack.start_worker()
    for token, submission_id in zip(tokens, ids, strict=True):
        done = wait_for(
            lambda t=token, i=submission_id: (s := stack.submission(t, i))["state"] == "succeeded" and s,
            180,
            f"submission {submission_id} after the Redis restart",
        )
        assert done["progress"] == {"done": 6, "total": 6}
    assert "reconciler" in stack.log("worker")
