"""jobs-v1 in both sandboxes (issue 19): a sandboxed episode makes exactly the in-process run's actions and
metrics (seeded and keyed episodes); a policy that vandalises its view still makes SJF's actions; a policy that
looks for future jobs finds nothing. Hangs, crashes and replies of the wrong type: test_track_corpus.py."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import pytest

from layersched.sim.episodes import EpisodeSpec, policy_seed
from layersched.sim.errors import PolicyError
from layersched.sim.tracks import get_track
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario
from layersched.sim.tracks.layers_v1.episode import trace_hash
from layersched.worker.sandbox.episode_process import seed_globals
from layersched.worker.sandbox.limits import SandboxLimits
from layersched.worker.sandbox.outcomes import EpisodeJob, EpisodeOutcome
from layersched.worker.sandbox.runner import open_sandbox

TRACK = get_track("jobs-v1")
SCENARIO = JobsScenario(new_job_rate=0.7, simu_len=30)
EPISODES = [EpisodeSpec("s0", seed=0), EpisodeSpec("s1", seed=1), EpisodeSpec("k0", key=bytes(range(16)))]

# A student's SJF, written against the contract (the track's own is layersched.sim.tracks.jobs_v1.baselines.sjf).
SJF = """
    def sjf(env):
        best, action = 0.0, None
        for i, job in enumerate(env.slots):
            if job is not None and env.fits_now(i) and 1 / job.length > best:
                best, action = 1 / job.length, i
        return action

    def policy(env, rng):
        return sjf(env)
"""
RANDOM = """
    def policy(env, rng):
        mask = env.mask()
        choices = [i for i, ok in enumerate(mask[:-1]) if ok] + ([None] if mask[-1] else [])
        return rng.choice(choices)
"""
# Decides, then wrecks every part of its view it can reach: the next decision's view is the truth again.
VANDAL = SJF.replace(
    "        return sjf(env)",
    """        action = sjf(env)
        env.free[:] = 0
        env.slots[:] = [None] * len(env.slots)
        env.time, env.backlog, env.since_new_job = -1, 999, 0
        object.__setattr__(env.scenario, "num_nw", 1)  # frozen, but not to a determined vandal
        return action""",
)
# Searches its process for anything that holds jobs beyond the present; replies a string (an invalid action that
# ends the episode, naming what it found) if it finds any. The view's attributes are exactly the contract's and
# _free_units, the payload's free units that free is built from.
PEEK = SJF.replace(
    "        return sjf(env)",
    """        import gc

        suspects = {"Job", "JobsEnv", "JobsEpisode", "JobsSimulator", "DrawnSimulator", "KeyedRandom", "SeededRandom"}
        for obj in gc.get_objects():
            if type(obj).__name__ in suspects:
                return "found a " + type(obj).__name__
        for job in env.slots:
            if job is not None and job.arrival > env.time:
                return "found a job from the future"
        env.free  # built on first use: then an attribute like the others
        if set(vars(env)) != {"scenario", "time", "since_new_job", "backlog", "free", "slots", "_free_units"}:
            return "found " + repr(sorted(vars(env)))
        return sjf(env)""",
)


@pytest.fixture(params=["process", pytest.param("docker", marks=pytest.mark.docker)])
def sandbox(request: pytest.FixtureRequest) -> tuple[str, str | None]:
    """The backend and, for Docker, the sandbox image (which holds every built-in track)."""
    if request.param == "process":
        return "process", None
    return "docker", request.getfixturevalue("sandbox_image")


def run(tmp_path: Path, source: str, sandbox: tuple[str, str | None]) -> tuple[list[EpisodeJob], list[EpisodeOutcome]]:
    backend, image = sandbox
    bundle = tmp_path / "policy.py"
    bundle.write_text(textwrap.dedent(source))
    # The keyed episode is a hidden set's kind: allowed on the process backend for this test only.
    with open_sandbox(
        bundle,
        backend=backend,
        image=image,
        limits=SandboxLimits(),
        allow_process_for_hidden=True,  # type: ignore[arg-type]
    ) as session:
        scenario_hash = TRACK.scenario_hash(SCENARIO)
        jobs = [
            EpisodeJob("jobs", SCENARIO, ep, policy_seed(session.bundle_sha256, scenario_hash, ep.id), "jobs-v1")
            for ep in EPISODES
        ]
        return jobs, [session.run_episode(job) for job in jobs]


def in_process(job: EpisodeJob, baseline: str) -> tuple[tuple[int, ...], object]:
    seed_globals(job.policy_seed)
    played = TRACK.run_episode(
        SCENARIO, TRACK.baseline(baseline), job.episode.workload_rng(), random.Random(job.policy_seed)
    )
    return played.actions, played.metrics


@pytest.mark.parametrize(
    ("source", "baseline"),
    [(SJF, "SJF"), (RANDOM, "Random"), (VANDAL, "SJF"), (PEEK, "SJF")],
    ids=["sjf", "random", "vandal", "peek"],
)
def test_a_sandboxed_episode_is_the_in_process_run(
    tmp_path: Path, source: str, baseline: str, sandbox: tuple[str, str | None]
) -> None:
    jobs, outcomes = run(tmp_path, source, sandbox)
    for job, outcome in zip(jobs, outcomes, strict=True):
        actions, metrics = in_process(job, baseline)
        assert (outcome.status, outcome.message) == ("ok", "")
        assert outcome.trace_hash == trace_hash(list(actions))
        assert outcome.n_actions == len(actions) > 0
        assert outcome.metrics == metrics


def test_a_reply_that_is_not_a_slot_is_an_invalid_action(tmp_path: Path, sandbox: tuple[str, str | None]) -> None:
    _, outcomes = run(tmp_path, "def policy(env, rng):\n    return len(env.slots) + 1\n", sandbox)
    for outcome in outcomes:
        assert outcome.status == "invalid_action"
        assert outcome.message == "step 0: policy returned slot 11, outside 0..9 (None or 10 for void)"
        assert (outcome.step, outcome.metrics) == (0, None)


def test_the_peek_finds_the_future_where_it_is_there() -> None:
    # In-process, the authoritative episode shares the policy's process: the same search finds it, so the
    # sandbox's "nothing found" above is the sandbox's doing.
    namespace: dict[str, object] = {}
    exec(textwrap.dedent(PEEK), namespace)
    with pytest.raises(PolicyError, match=r"^step 0: policy returned 'found a [A-Za-z]+' of type str"):
        TRACK.run_episode(SCENARIO, namespace["policy"], EPISODES[0].workload_rng(), random.Random(0))
