"""The track interface is real, end to end: a track that lives under tests/ only (``tests.toy_track``) goes from the
CLI's submit through Celery and the Docker sandbox to the leaderboard's API and page, scored against its own
reference baseline, with no line of worker/, server/ or sdk/ naming it. The service learns of it the way an
organiser's own track would reach it: ``LAYERSCHED_TRACK_MODULES`` on the server and workers, the module on their
import path, and a sandbox image with its package (``tests/worker/test_toy_track_sandbox.py``'s ``toy_image``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from layersched.server import admin
from layersched.sim.tracks import load_track_module
from tests.pipeline.stack import Stack, running_stack
from tests.server.test_browser import chromium
from tests.worker.test_toy_track_sandbox import toy_image  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
TOY_SET = REPO / "tests" / "toy_track" / "evalset.toml"
LEAST_LOADED = b"""def policy(loads, size, rng):
    return loads.index(min(loads))
"""


@pytest.fixture
def stack(tmp_path: Path, toy_image: str) -> Iterator[Stack]:  # noqa: F811
    load_track_module("tests.toy_track")  # this process registers and scores the set
    service = {
        "LAYERSCHED_TRACK_MODULES": json.dumps(["tests.toy_track"]),
        "PYTHONPATH": str(REPO),  # the server's and workers' processes import tests.toy_track
    }
    with running_stack(
        tmp_path, tmp_path / "baselines", evalset=TOY_SET, process_env=service, LAYERSCHED_SANDBOX_IMAGE=toy_image
    ) as running:
        yield running


def test_a_track_only_the_tests_know_runs_from_the_cli_to_the_leaderboard_page(stack: Stack, tmp_path: Path) -> None:
    stack.start_worker()
    token = admin.add_user(name="ada", email="ada@example.org", settings=stack.settings).token
    policy = tmp_path / "policy.py"
    policy.write_bytes(LEAST_LOADED)
    result = stack.cli(token, "submit", str(policy), "--name", "least-loaded", "--wait")
    assert result.returncode == 0, result.stdout + result.stderr + stack.log("worker")
    assert "ratio to Random, lower is better" in result.stdout

    board = httpx.get(f"{stack.api_url}/api/v1/leaderboard", timeout=10).json()
    assert (board["track"], board["reference_baseline"]) == ("toy-v1", "Random")
    rows = {row["participant"]: row for row in board["rows"]}
    assert {name for name, row in rows.items() if row["baseline"]} == {"Random", "LeastLoaded"}
    assert rows["Random"]["score"] == pytest.approx(1.0)
    # The submission is LeastLoaded itself: exactly the baseline's score, better than the reference.
    assert rows["ada"]["score"] == pytest.approx(rows["LeastLoaded"]["score"], abs=1e-12)
    assert rows["ada"]["score"] < 0.8

    page = chromium(tmp_path, "--dump-dom", f"{stack.api_url}/")  # the DOM a real browser built
    assert "least-loaded" in page and "toy-v1" in page and "per-scenario ratios to Random" in page
    assert "Greedy" not in page
