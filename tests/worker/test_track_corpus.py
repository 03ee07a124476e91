"""The hostile-policy corpus of the new tracks (issues 19 and 20, "Checks"), in both sandboxes: a policy that hangs,
one that crashes and one that answers with the wrong type each end the episode with its status, the step at fault
and the track's own words, and a sandbox that saw them goes on to run the next episode.

The view vandals, the out-of-range replies and the peeks for the future are with each track's sandbox tests
(test_jobs_sandbox.py, test_workflows_sandbox.py); the lab track's corpus is sandbox_contract.py's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from layersched.sim.episodes import EpisodeSpec, policy_seed
from layersched.sim.tracks import get_track
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario
from layersched.worker.sandbox.limits import SandboxLimits
from layersched.worker.sandbox.outcomes import EpisodeJob, EpisodeOutcome
from layersched.worker.sandbox.runner import open_sandbox

EPISODES = [EpisodeSpec("s0", seed=0), EpisodeSpec("s1", seed=1)]  # public: their output is kept


@dataclass(frozen=True)
class Corpus:
    """How a track's policies are written: its signature and a working decision to make when not misbehaving."""

    track_id: str
    scenario: Any
    signature: str
    imports: str
    works: str


TRACKS = {
    "jobs-v1": Corpus(
        "jobs-v1",
        JobsScenario(new_job_rate=0.7, simu_len=20),
        "env, rng",
        "from layersched.sim.tracks.jobs_v1.baselines import sjf",
        "sjf(env, rng)",
    ),
    "workflows-v1": Corpus(
        "workflows-v1",
        WorkflowScenario(n_workflows=2, arrival_rate=0.01, vm_counts=(1, 1, 1)),
        "view, candidates, rng",
        "from layersched.sim.tracks.workflows_v1.baselines import Heft\n\nheft = Heft()",
        "heft(view, candidates, rng)",
    ),
}

# {misbehaviour} runs at the decision of index STEP; every other decision is the track's working one.
TEMPLATE = """\
import sys
{imports}

STEP = {step}
calls = 0


def policy({signature}):
    global calls
    step, calls = calls, calls + 1
    print(f"deciding {{step}}")
    if step == STEP:
        {misbehaviour}
    return {works}
"""
HANG = "while True:\n            pass"
CRASH = 'print("about to fail", file=sys.stderr)\n        raise RuntimeError(f"boom at step {step}")'
WRONG_TYPE = "return 1.5"


@pytest.fixture(params=["process", pytest.param("docker", marks=pytest.mark.docker)])
def sandbox(request: pytest.FixtureRequest) -> tuple[str, str | None]:
    """The backend and, for Docker, the sandbox image (which holds every built-in track)."""
    if request.param == "process":
        return "process", None
    return "docker", request.getfixturevalue("sandbox_image")


def run(
    tmp_path: Path, corpus: Corpus, misbehaviour: str, step: int, sandbox: tuple[str, str | None], **limits: Any
) -> list[EpisodeOutcome]:
    source = TEMPLATE.format(
        imports=corpus.imports, step=step, signature=corpus.signature, misbehaviour=misbehaviour, works=corpus.works
    )
    bundle = tmp_path / "policy.py"
    bundle.write_text(source)
    backend, image = sandbox
    track = get_track(corpus.track_id)
    with open_sandbox(bundle, backend=backend, image=image, limits=SandboxLimits(**limits)) as session:  # type: ignore[arg-type]
        scenario_hash = track.scenario_hash(corpus.scenario)
        return [
            session.run_episode(
                EpisodeJob(
                    "corpus",
                    corpus.scenario,
                    ep,
                    policy_seed(session.bundle_sha256, scenario_hash, ep.id),
                    corpus.track_id,
                )
            )
            for ep in EPISODES
        ]


@pytest.mark.parametrize("track_id", list(TRACKS))
def test_a_hang_times_out_at_its_step_and_the_next_episode_runs(
    tmp_path: Path, track_id: str, sandbox: tuple[str, str | None]
) -> None:
    started = time.monotonic()
    outcomes = run(tmp_path, TRACKS[track_id], HANG, 2, sandbox, decision_seconds=0.5)
    for outcome in outcomes:  # each episode imports the policy afresh: both hang at their step 2
        assert (outcome.status, outcome.message) == (
            "timeout",
            "step 2: no action within the per-decision deadline of 0.5 s",
        )
        assert (outcome.step, outcome.n_actions, outcome.metrics) == (2, 2, None)
        assert outcome.stdout == "deciding 0\ndeciding 1\ndeciding 2\n"
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("track_id", list(TRACKS))
def test_a_crash_ends_the_episode_with_its_traceback(
    tmp_path: Path, track_id: str, sandbox: tuple[str, str | None]
) -> None:
    for outcome in run(tmp_path, TRACKS[track_id], CRASH, 1, sandbox):
        assert outcome.status == "crash"
        assert outcome.message.startswith("step 1: policy raised an exception\nTraceback")
        assert outcome.message.endswith("RuntimeError: boom at step 1")
        assert (outcome.step, outcome.n_actions, outcome.metrics) == (1, 1, None)
        assert (outcome.stdout, outcome.stderr) == ("deciding 0\ndeciding 1\n", "about to fail\n")


@pytest.mark.parametrize("track_id", list(TRACKS))
def test_a_reply_of_the_wrong_type_is_named_in_the_tracks_words(
    tmp_path: Path, track_id: str, sandbox: tuple[str, str | None]
) -> None:
    expected = get_track(track_id).action_description
    for outcome in run(tmp_path, TRACKS[track_id], WRONG_TYPE, 0, sandbox):
        assert (outcome.status, outcome.message) == (
            "invalid_action",
            f"step 0: policy returned 1.5 of type float, expected {expected}",
        )
        assert (outcome.step, outcome.n_actions, outcome.metrics) == (0, 0, None)
