"""The two tracks after the lab's, end to end (issues 19 and 20): each track's public sample registered as the
server's set, a student's policy submitted from the CLI, run by a Celery worker in the Docker sandbox (the standard
image holds every built-in track) and ranked on the leaderboard against the track's own reference baseline."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from layersched.server import admin
from layersched.sim.evalset import evalset_file, load_evalset
from tests.pipeline.stack import Stack, running_stack

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
# A student's copy of one of the track's baselines: its score must be exactly that baseline's row.
COPY_OF_BASELINE = """from layersched.sim.tracks import get_track

_baseline = get_track({track!r}).baseline({baseline!r})


def policy{arguments}:
    return _baseline{arguments}
"""
CASES = [
    ("jobs-sample", "jobs-v1", "SJF", "Tetris*", "(env, rng)"),
    ("workflows-sample", "workflows-v1", "HEFT", "MinMin", "(view, candidates, rng)"),
]


@pytest.fixture(params=CASES, ids=[case[1] for case in CASES])
def case(request: pytest.FixtureRequest, tmp_path: Path, sandbox_image: str) -> Iterator[tuple[Stack, tuple[str, ...]]]:
    set_name, *_ = request.param
    with running_stack(
        tmp_path, tmp_path / "baselines", evalset=evalset_file(set_name), LAYERSCHED_SANDBOX_IMAGE=sandbox_image
    ) as running:
        yield running, request.param


def test_a_built_in_track_runs_from_the_cli_to_the_leaderboard(
    case: tuple[Stack, tuple[str, ...]], tmp_path: Path
) -> None:
    stack, (_set, track, reference, baseline, arguments) = case
    stack.start_worker()
    token = admin.add_user(name="ada", email="ada@example.org", settings=stack.settings).token
    policy = tmp_path / "policy.py"
    policy.write_text(COPY_OF_BASELINE.format(track=track, baseline=baseline, arguments=arguments))
    result = stack.cli(token, "submit", str(policy), "--name", f"my-{baseline}", "--wait")
    assert result.returncode == 0, result.stdout + result.stderr + stack.log("worker")
    assert f"ratio to {reference}, lower is better" in result.stdout

    board = httpx.get(f"{stack.api_url}/api/v1/leaderboard", timeout=10).json()
    assert (board["track"], board["reference_baseline"]) == (track, reference)
    rows = {row["participant"]: row for row in board["rows"]}
    assert rows[reference]["score"] == pytest.approx(1.0)
    assert rows["ada"]["score"] == pytest.approx(rows[baseline]["score"], abs=1e-12)
    submission = httpx.get(f"{stack.api_url}/api/v1/submissions/1", headers={"Authorization": f"Bearer {token}"})
    assert submission.json()["evaluations"][0]["sandbox"] == "docker"
    # The sample's episodes are seeded: the worker kept their actions, and each replays on the server beside the
    # reference's (the page is drawn only if the replay reproduces the recorded trace: issue 33).
    headers = {"Authorization": f"Bearer {token}"}
    page = httpx.get(f"{stack.api_url}/submissions/1", headers=headers, timeout=10).text
    links = re.findall(r'href="(/submissions/1/episodes/[^"]+)"', page)
    assert len(links) == sum(len(sc.episodes) for sc in load_evalset(evalset_file(_set)).scenarios), page
    replay = httpx.get(f"{stack.api_url}{links[0]}", headers=headers, timeout=30)
    assert replay.status_code == 200 and replay.text.count('<g class="panel" data-panel="my-') >= 1, replay.text[-2000:]
    assert f'data-panel="{reference}"' in replay.text
