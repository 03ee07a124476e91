"""workflows-v1 in both sandboxes: the sandboxed episode makes the in-process run's actions and metrics, a
view vandal changes nothing, and a policy that searches its process for actual durations or future workflows finds
nothing (the replica never receives them)."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import pytest

from layersched.sim.episodes import EpisodeSpec, policy_seed
from layersched.sim.errors import PolicyError
from layersched.sim.tracks import get_track
from layersched.sim.tracks.layers_v1.episode import trace_hash
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario
from layersched.worker.sandbox.episode_process import seed_globals
from layersched.worker.sandbox.limits import SandboxLimits
from layersched.worker.sandbox.outcomes import EpisodeJob
from layersched.worker.sandbox.runner import open_sandbox

TRACK = get_track("workflows-v1")
SCENARIO = WorkflowScenario(n_workflows=3, arrival_rate=0.01, vm_counts=(1, 1, 1))
EPISODES = [EpisodeSpec("s0", seed=0), EpisodeSpec("s1", seed=1)]  # public: the process backend refuses keyed ones

HEFT = """
    from layersched.sim.tracks.workflows_v1.baselines import Heft

    policy = Heft()
"""
RANDOM = """
    from layersched.sim.tracks.workflows_v1.baselines import random_policy as policy
"""
VANDAL = """
    from layersched.sim.tracks.workflows_v1.baselines import Heft

    heft = Heft()


    def policy(view, candidates, rng):
        action = heft(view, candidates, rng)
        for wf in view.workflows.values():
            for t in wf.tasks:
                t.status, t.means, t.parents = "done", (1.0,) * view.n_vms, ()
        view.candidates.reverse()
        for vm in view.vms:
            vm.free_cores, vm.queue = 0, [(7, 7)]
        view.workflows.clear()
        return action
"""
# Looks everywhere it can reach in its process for the trusted side's objects: the drawn workflows (their actual
# duration factors), the episode, its generator or key; and for payload dicts naming an unseen workflow. Anything
# found is reported the only way a policy can: an invalid action, which ends the episode.
PEEK = """
    import gc
    import sys

    from layersched.sim.tracks.workflows_v1.baselines import Heft

    heft = Heft()
    SECRET_TYPES = {
        "WorkflowEpisode", "WorkflowTrusted", "WorkflowDraw", "Workflow", "Generator", "KeyedRandom", "PCG64"
    }
    seen = set()


    def leaks(view):
        seen.update(view.workflows)
        for obj in gc.get_objects():
            if type(obj).__name__ in SECRET_TYPES:
                return f"object {type(obj).__name__}"
            # type(), not isinstance(): isinstance reads __class__, which some objects (torch's deprecated
            # aliases, in a process that imported torch) answer with a warning.
            if type(obj) is dict and "new" in obj and "upd" in obj:
                if any(wf[0] not in seen and wf[0] > max(seen, default=-1) for wf in obj["new"]):
                    return "a future workflow"
        frame = sys._getframe()
        while frame is not None:
            for value in frame.f_locals.values():
                if type(value).__name__ in SECRET_TYPES:
                    return f"frame local {type(value).__name__}"
            frame = frame.f_back
        for wf in view.workflows.values():
            for t in wf.tasks:
                if t.status != "done" and t.finish is not None:
                    return "an actual duration before the finish"
        return None


    def policy(view, candidates, rng):
        found = leaks(view)
        if found is not None:
            return f"found {found}"
        return heft(view, candidates, rng)
"""


@pytest.fixture(params=["process", pytest.param("docker", marks=pytest.mark.docker)])
def sandbox(request: pytest.FixtureRequest) -> tuple[str, str | None]:
    """The backend and, for Docker, the sandbox image (which holds every built-in track)."""
    if request.param == "process":
        return "process", None
    return "docker", request.getfixturevalue("sandbox_image")


def run(tmp_path: Path, source: str, sandbox: tuple[str, str | None]):
    backend, image = sandbox
    bundle = tmp_path / "policy.py"
    bundle.write_text(textwrap.dedent(source))
    with open_sandbox(bundle, backend=backend, image=image, limits=SandboxLimits()) as session:  # type: ignore[arg-type]
        jobs = [
            EpisodeJob(
                "flows",
                SCENARIO,
                ep,
                policy_seed(session.bundle_sha256, TRACK.scenario_hash(SCENARIO), ep.id),
                TRACK.id,
            )
            for ep in EPISODES
        ]
        return jobs, [session.run_episode(job) for job in jobs]


def in_process(job: EpisodeJob, baseline: str):
    seed_globals(job.policy_seed)
    return TRACK.run_episode(
        SCENARIO, TRACK.baseline(baseline), job.episode.workload_rng(), random.Random(job.policy_seed)
    )


@pytest.mark.parametrize(
    ("source", "baseline"),
    [(HEFT, "HEFT"), (RANDOM, "Random"), (VANDAL, "HEFT"), (PEEK, "HEFT")],
    ids=["heft", "random", "vandal", "peek"],
)
def test_sandboxed_episodes_match_the_in_process_run(tmp_path, source, baseline, sandbox):
    jobs, outcomes = run(tmp_path, source, sandbox)
    for job, outcome in zip(jobs, outcomes, strict=True):
        expected = in_process(job, baseline)
        assert (outcome.status, outcome.message) == ("ok", "")
        assert outcome.n_actions == len(expected.actions)
        assert outcome.trace_hash == trace_hash(expected.actions)
        assert outcome.metrics == expected.metrics
    assert outcomes[0].metrics != outcomes[1].metrics  # two different workloads


def test_an_out_of_range_reply_ends_the_episode_with_the_tracks_message(tmp_path, sandbox):
    jobs, outcomes = run(tmp_path, "def policy(view, candidates, rng):\n    return -5\n", sandbox)
    for job, outcome in zip(jobs, outcomes, strict=True):
        with pytest.raises(PolicyError) as expected:
            TRACK.run_episode(SCENARIO, lambda view, candidates, rng: -5, job.episode.workload_rng(), random.Random(0))
        assert outcome.status == "invalid_action"
        assert outcome.message == str(expected.value)
        assert outcome.message.startswith("step 0: action -5 is not -1 (wait) or one of 0..")
        assert (outcome.step, outcome.n_actions, outcome.metrics) == (0, 0, None)


def test_a_pair_reply_is_told_the_action_hint_in_the_policys_own_names(tmp_path, sandbox):
    """Issue 29: the evaluation words a refused reply as ``layersched validate`` does, in the names the student
    wrote (``obs.action``), not the contract's (``view.action``)."""
    _, outcomes = run(tmp_path, "def policy(obs, tasks, rng):\n    return (0, 0)\n", sandbox)
    for outcome in outcomes:
        assert outcome.status == "invalid_action"
        assert outcome.message == (
            "step 0: policy returned (0, 0) of type tuple, expected an int action (obs.action(c, v), or WAIT)"
        )


def test_the_peek_would_find_the_trusted_side_where_it_lives():
    # In-process the trusted episode shares the policy's process: the same search finds it, so its silence in the
    # sandbox means something. (Its workflows, or the generator it draws the ones to come from at their arrival.)
    namespace: dict = {}
    exec(textwrap.dedent(PEEK), namespace)
    with pytest.raises(PolicyError, match=r"^step 0: action 'found (object|frame local) (Workflow|Generator|PCG64)"):
        TRACK.run_episode(SCENARIO, namespace["policy"], random.Random(0), random.Random(0))
