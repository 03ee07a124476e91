"""Red team of the two new tracks, jobs-v1 and workflows-v1 (hostile policies against the trusted side).

Each weakness found is a test that asserts the safe behaviour and is marked ``xfail(strict=True)``: it fails while
the weakness exists (so the branch stays green) and turns into an unexpected pass, which fails the run, once fixed.
Attacks that the tracks defend are plain tests, to keep them defended.

Sandboxed tests use the process backend (``allow_process_for_hidden=True`` where an episode is keyed); the rest
drive the tracks' ``TrustedEpisode`` in-process, which is exactly the code the worker runs on a sandbox's replies
(the driver hands ``check`` only ints: ``protocol.expect`` refuses bool, float and anything else first).
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from layersched.sim.episodes import EpisodeSpec, policy_seed
from layersched.sim.errors import PolicyError
from layersched.sim.keyed_random import KeyedRandom
from layersched.sim.tracks import get_track
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario
from layersched.sim.tracks.layers_v1.episode import trace_hash
from layersched.sim.tracks.workflows_v1 import env as wf_env
from layersched.sim.tracks.workflows_v1.dag import StaticDag
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario, static_scenario
from layersched.worker.sandbox.episode_process import seed_globals
from layersched.worker.sandbox.limits import SandboxLimits
from layersched.worker.sandbox.outcomes import EpisodeJob, EpisodeOutcome
from layersched.worker.sandbox.runner import open_sandbox
from tests.sim.test_jobs_model import count_draws

JOBS = get_track("jobs-v1")
FLOWS = get_track("workflows-v1")
POLICIES = Path(__file__).parent / "policies"
KEY = bytes(range(100, 132))


def sandboxed(
    tmp_path: Path, source: str, track: Any, scenario: Any, episodes: list[EpisodeSpec], **limits: Any
) -> tuple[list[EpisodeJob], list[EpisodeOutcome]]:
    """Run ``source`` as a bundle's policy.py on ``episodes`` of ``scenario`` in one process sandbox."""
    bundle = tmp_path / "policy.py"
    bundle.write_text(textwrap.dedent(source))
    with open_sandbox(
        bundle,
        backend="process",
        limits=SandboxLimits(**limits),
        allow_process_for_hidden=True,  # type: ignore[arg-type]
    ) as session:
        digest = track.scenario_hash(scenario)
        jobs = [
            EpisodeJob("red", scenario, ep, policy_seed(session.bundle_sha256, digest, ep.id), track.id)
            for ep in episodes
        ]
        return jobs, [session.run_episode(job) for job in jobs]


def in_process(track: Any, scenario: Any, job: EpisodeJob, baseline: str) -> Any:
    seed_globals(job.policy_seed)
    return track.run_episode(
        scenario, track.baseline(baseline), job.episode.workload_rng(), random.Random(job.policy_seed)
    )


# =====================================================================================================================
# 1. Hidden data
# =====================================================================================================================

# Times the trusted side's work between the episode process's hello and its first task: the policy patches, at
# import, the function its episode process greets with, then reports the gap at step 0 as an invalid action (a
# string: the only channel a test needs; a real attacker would act on it, or sleep it into the evaluation's time).
HELLO_TIMER = """
    import time

    from layersched.worker.sandbox import protocol

    _send = protocol.send
    HELLO = []


    def send(sock, message, **kw):
        if message.get("type") == "hello":
            HELLO.append(time.monotonic())
        return _send(sock, message, **kw)


    protocol.send = send


    def policy(view, candidates, rng):
        return f"gap_ms={(time.monotonic() - HELLO[0]) * 1000:.1f}"
"""


def test_the_policy_cannot_time_the_trusted_sides_work_before_step_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fixed: workflows-v1 draws and indexes every workflow of the episode (future ones too) in first_decision,
    which the driver ran while the episode process connected, so the hello -> first task gap was that time. The
    driver now prepares the first decision before the harness hears of the episode."""
    # The draw is lazy now (test_workflows_time_to_step_0_does_not_depend_on_future_workflows), so the preparation
    # is made long on purpose (the driver runs the trusted side in this process): whatever it takes, the policy
    # must not see it.
    first_of = wf_env.WorkflowEpisode.first

    def slow_first(self: wf_env.WorkflowEpisode) -> bool:
        time.sleep(0.2)
        return first_of(self)

    monkeypatch.setattr(wf_env.WorkflowEpisode, "first", slow_first)
    scenario = WorkflowScenario(n_workflows=200, families=("etl",), arrival_rate=0.004)
    episode = FLOWS.simulator(scenario).episode(random.Random(0))
    started = time.perf_counter()
    first = episode.first_decision()
    prepare_ms = (time.perf_counter() - started) * 1000
    assert len(first["new"]) == 1 and prepare_ms > 50  # the trusted side's work before step 0, in-process
    _, (outcome,) = sandboxed(tmp_path, HELLO_TIMER, FLOWS, scenario, [EpisodeSpec("s0", seed=0)])
    assert outcome.status == "invalid_action"
    gap_ms = float(re.search(r"gap_ms=([0-9.]+)", outcome.message)[1])  # type: ignore[index]
    # Safe: what the policy can time before step 0 does not contain the trusted side's preparation of the episode.
    assert gap_ms < 0.25 * prepare_ms, (gap_ms, prepare_ms)


def _trim_future(workflows: list[wf_env.Workflow]) -> list[wf_env.Workflow]:
    """The same first workflow, every later one cut to its first task (a source: task 0 never has a parent)."""
    return [workflows[0]] + [
        dataclasses.replace(wf, tasks=wf.tasks[:1], means=wf.means[:1], factors=wf.factors[:1]) for wf in workflows[1:]
    ]


class _Given:
    """A ``WorkflowDraw`` that serves already-drawn workflows (the test chooses the future)."""

    def __init__(self, workflows: list[wf_env.Workflow]) -> None:
        self.workflows = workflows
        self.count = len(workflows)
        self.next_id = 0

    def next_arrival(self) -> float | None:
        return self.workflows[self.next_id].arrival if self.next_id < self.count else None

    def next_workflow(self) -> wf_env.Workflow:
        self.next_id += 1
        return self.workflows[self.next_id - 1]


def test_workflows_time_to_step_0_does_not_depend_on_future_workflows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fixed: WorkflowEpisode.draw drew and indexed every workflow of the episode before step 0, so the wait for the
    first decision grew with the workflows still to come. Each workflow is now drawn and indexed when it arrives
    (``WorkflowDraw``): the future below is 20x smaller in tasks, and step 0 must take no longer for the big one."""
    scenario = WorkflowScenario(n_workflows=150, families=("etl",), arrival_rate=0.004)
    cluster = wf_env.build_cluster(scenario)
    big = wf_env.draw_workflows(scenario, cluster, random.Random(0))
    small = _trim_future(big)
    assert sum(len(w.tasks) for w in big) > 20 * sum(len(w.tasks) for w in small[1:])

    def first(workflows: list[wf_env.Workflow]) -> tuple[float, Any]:
        monkeypatch.setattr(wf_env, "WorkflowDraw", lambda *_: _Given(workflows))
        best, payload = float("inf"), None
        for _ in range(5):
            episode = FLOWS.simulator(scenario).episode(random.Random(0))
            t0 = time.perf_counter()
            payload = episode.first_decision()
            best = min(best, time.perf_counter() - t0)
        return best, payload

    t_big, p_big = first(big)
    t_small, p_small = first(small)
    assert p_big == p_small  # step 0 is the same decision: only the hidden future differs
    assert t_big < 3 * t_small, f"step 0 took {t_big * 1e3:.2f} ms with the big future, {t_small * 1e3:.2f} without"


@pytest.mark.parametrize("spec", [EpisodeSpec("s", seed=3), EpisodeSpec("k", key=KEY)], ids=["seeded", "keyed"])
def test_jobs_time_to_step_0_does_not_depend_on_future_jobs(spec: EpisodeSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fixed (issue 30, item 6): jobs-v1's first_decision drew every job of the episode, future ones too, while the
    next episode's spare process waited for its assignment (the driver prepares step 0 first): the wait grew with
    the jobs still to come. Each step's arrival is now drawn when time reaches it (``JobDraw``): with a future 1000x
    longer (same seed or key, so the same first steps), the trusted side prepares the same step 0 with the same
    draws. (Counted draws, not seconds: the draws are all of the preparation's work that the future could change.)"""
    counted = count_draws(monkeypatch)

    def first(simu_len: int) -> tuple[Any, int]:
        episode = JOBS.simulator(JobsScenario(simu_len=simu_len)).episode(spec.workload_rng())
        payload = episode.first_decision()
        return payload, counted[-1].calls

    (short, short_draws), (long, long_draws) = first(50), first(50_000)
    assert long == short  # step 0 is the same decision: only the hidden future differs
    assert long_draws == short_draws  # the draws of the steps up to step 0's time, none of the future


class _CountingKeyed(KeyedRandom):
    bits = 0

    def getrandbits(self, k: int) -> int:
        type(self).bits += k
        return super().getrandbits(k)

    def random(self) -> float:
        type(self).bits += 53
        return super().random()


def test_a_keyed_workflows_episode_keeps_at_least_128_bits_of_its_key() -> None:
    """Fixed before the track was published: draw_workflows seeded its PCG64 with getrandbits(64), so a keyed
    episode's workload had 64 bits of the key's >= 128 (jobs-v1 keeps 256); now 256."""
    _CountingKeyed.bits = 0
    scenario = WorkflowScenario()
    wf_env.draw_workflows(scenario, wf_env.build_cluster(scenario), _CountingKeyed(KEY, "e"))
    assert _CountingKeyed.bits >= 128


def test_jobs_keyed_workload_keeps_256_bits() -> None:
    from layersched.sim.tracks.jobs_v1.workload import draw_jobs, workload_state

    _CountingKeyed.bits = 0
    draw_jobs(JobsScenario(), workload_state(_CountingKeyed(KEY, "e")))
    assert _CountingKeyed.bits >= 256


def _workflows_peek() -> str:
    from tests.worker.test_workflows_sandbox import PEEK

    return PEEK


def _jobs_peek() -> str:
    from tests.worker.test_jobs_sandbox import PEEK

    return PEEK


def test_a_keyed_workflows_episode_leaves_nothing_of_its_future_in_the_sandbox(tmp_path: Path) -> None:
    # The track's own test runs the peek on public episodes only; a keyed one is what matters.
    scenario = WorkflowScenario(n_workflows=3, arrival_rate=0.01, vm_counts=(1, 1, 1))
    episodes = [EpisodeSpec("k0", key=KEY), EpisodeSpec("k1", key=KEY[::-1])]
    jobs, outcomes = sandboxed(tmp_path, _workflows_peek(), FLOWS, scenario, episodes)
    for job, outcome in zip(jobs, outcomes, strict=True):
        expected = in_process(FLOWS, scenario, job, "HEFT")
        assert (outcome.status, outcome.message) == ("ok", "")
        assert outcome.trace_hash == trace_hash(expected.actions)
        assert outcome.metrics == expected.metrics


# Reads everything reachable in its process (every frame, every object the collector knows, numbers in payload-like
# lists) for job data beyond the present, on a keyed episode.
JOBS_DEEP_PEEK = """
    import gc
    import sys

    def sjf(env):
        best, action = 0.0, None
        for i, job in enumerate(env.slots):
            if job is not None and env.fits_now(i) and 1 / job.length > best:
                best, action = 1 / job.length, i
        return action

    SUSPECTS = {"Job", "JobsEnv", "JobsEpisode", "RandomState", "KeyedRandom", "SeededRandom", "deque"}

    def policy(env, rng):
        frame = sys._getframe()
        while frame is not None:
            for name, value in frame.f_locals.items():
                if type(value).__name__ in SUSPECTS:
                    return "frame " + name + " " + type(value).__name__
            frame = frame.f_back
        for obj in gc.get_objects():
            if type(obj).__name__ in SUSPECTS:
                return "object " + type(obj).__name__
            if type(obj) is list and len(obj) > 200 and all(type(v) is int for v in obj[:50]):
                return "a long list of ints"
        return sjf(env)
"""


def test_a_keyed_jobs_episode_leaves_nothing_of_its_future_in_the_sandbox(tmp_path: Path) -> None:
    scenario = JobsScenario(new_job_rate=0.7, simu_len=30)
    episodes = [EpisodeSpec("k0", key=KEY)]
    jobs, outcomes = sandboxed(tmp_path, JOBS_DEEP_PEEK, JOBS, scenario, episodes)
    expected = in_process(JOBS, scenario, jobs[0], "SJF")
    assert (outcomes[0].status, outcomes[0].message) == ("ok", "")
    assert outcomes[0].trace_hash == trace_hash(list(expected.actions))


def test_workflows_payloads_carry_no_future_workflow_and_no_actual_duration_before_a_finish() -> None:
    # Every payload of a keyed episode, read against the trusted side's own state as it was sent.
    scenario = WorkflowScenario(n_workflows=6, arrival_rate=0.01)
    rng = random.Random(3)
    episode = FLOWS.simulator(scenario).episode(KeyedRandom(KEY, "x"))
    sent: list[Any] = [episode.first_decision()]
    step = 0
    while True:
        payload, ep = sent[-1], episode.episode
        for wf in payload["new"]:
            assert ep.workflows[wf[0]].arrival <= payload["t"]
        for _w, _i, status, _vm, _placed, start, finish, _ready in payload["upd"]:
            assert (finish is None) == (status != 3)
            assert start is None or start <= payload["t"]
        text = json.dumps(payload)
        for g, factor in enumerate(ep.factor):  # no task's factor (its actual/mean ratio) travels before its end
            if ep.finish[g] is None and factor != 1.0:
                assert repr(factor) not in text
        options = [a for a in range(-1, len(ep.candidates) * ep.scenario.n_vms) if _accepted(episode, a, step)]
        sent.clear()
        if not episode.advance(rng.choice(options), sent.append):
            break
        step += 1
    assert episode.metrics().mean_completion > 0


# =====================================================================================================================
# 2. Free retries: the trusted side's check, advance and metrics never raise anything but PolicyError
# =====================================================================================================================


def _accepted(episode: Any, value: object, step: int) -> bool:
    try:
        episode.check(value, step)
    except PolicyError:
        return False
    return True


HOSTILE = [None, True, False, 1.0, float("nan"), "0", b"0", [0], {}, np.int64(0), np.float64(0.0), 2**63, -(2**63),
           10**40, -(10**40), -1, -2, 10, 11, 2**31, -(2**31)]  # fmt: skip


def _fuzz(track: Any, scenario: Any, workload: Any, rng: random.Random, bound: int, void: object) -> int:
    """Drive one episode: at every decision every hostile value must be a PolicyError or a valid action, and the
    action applied is a random accepted one, voids/waits preferred (the "wait forever" policy). Returns decisions."""
    episode = track.simulator(scenario).episode(workload)
    payload = episode.first_decision()
    step = 0
    while payload is not None:
        assert step < bound, "the episode does not end"
        accepted = []
        for value in [*HOSTILE, *range(-3, 60)]:
            try:
                action = episode.check(value, step)
            except PolicyError as exc:
                assert f"step {step}" in str(exc)
                continue
            assert type(action) is int
            accepted.append(action)
        assert accepted, f"step {step}: no action is accepted"
        voids = [a for a in accepted if a == void]
        action = voids[0] if voids and rng.random() < 0.9 else rng.choice(accepted)
        out: list[Any] = []
        more = episode.advance(action, out.append)
        assert len(out) == int(more)
        payload = out[0] if more else None
        step += 1
    episode.metrics()
    return step


@pytest.mark.parametrize("seed", range(6))
def test_jobs_trusted_side_survives_every_reply_and_every_episode_ends(seed: int) -> None:
    rng = random.Random(seed)
    for scenario in (JobsScenario(), JobsScenario(new_job_rate=1.0), JobsScenario(new_job_rate=0.3, simu_len=70)):
        # Keyed and seeded; the bound: every void moves time one step, every placement consumes a job.
        s = scenario
        bound = s.simu_len * (s.time_horizon + 2) + s.simu_len * 2
        _fuzz(JOBS, scenario, KeyedRandom(KEY, f"j{seed}"), rng, bound, s.void)
        _fuzz(JOBS, scenario, EpisodeSpec("s", seed=seed).workload_rng(), rng, bound, s.void)


NULL_DAG = StaticDag.build(
    ["a", "b", "c", "d"],
    [(0, 1, 2.0), (0, 2, 0.0), (1, 3, 1.0), (2, 3, 5.0)],
    [[3.0, None], [0.0, 2.0], [None, 4.0], [1.0, 1.0]],  # nulls and a zero-length task
    [[0.0, 1.0], [1.0, 0.0]],
)


@pytest.mark.parametrize("seed", range(4))
def test_workflows_trusted_side_survives_every_reply_and_every_episode_ends(seed: int) -> None:
    rng = random.Random(seed)
    for scenario in (
        WorkflowScenario(n_workflows=3, arrival_rate=0.01),
        WorkflowScenario(n_workflows=2, arrival_rate=0.0, families=("ml",), vm_counts=(0, 0, 1)),
        static_scenario(NULL_DAG),
    ):
        episode = scenario.n_workflows * 120 * 3 + 10
        _fuzz(FLOWS, scenario, KeyedRandom(KEY, f"w{seed}"), rng, episode, -1)


# Hostile replies as a sandboxed policy sends them. Each must end the episode as the policy's fault, never as
# infrastructure_error (retried, free).
JOBS_REPLIES = {
    "huge": ("2**70", "invalid_action"),
    "int64-min": ("-(2**63)", "invalid_action"),
    "negative": ("-1", "invalid_action"),
    "bool": ("True", "invalid_action"),
    "float": ("1.0", "invalid_action"),
    "numpy-huge": ("__import__('numpy').uint64(2**64 - 1)", "invalid_action"),
    "void-forever": ("None", "invalid_action"),  # refused once arrivals are over and nothing runs
}
FLOWS_REPLIES = {
    "huge": ("2**70", "invalid_action"),
    "int64-max": ("2**63 - 1", "invalid_action"),
    "minus-two": ("-2", "invalid_action"),
    "bool": ("False", "invalid_action"),
    "none": ("None", "invalid_action"),
    "wait-forever": ("-1", "invalid_action"),  # refused at step 0: nothing runs
}


@pytest.mark.parametrize("track", ["jobs", "flows"])
def test_hostile_replies_are_the_policys_fault(tmp_path: Path, track: str) -> None:
    replies = JOBS_REPLIES if track == "jobs" else FLOWS_REPLIES
    args = "env, rng" if track == "jobs" else "view, candidates, rng"
    # One bundle plays every reply: the episode's id picks which.
    source = "REPLIES = {{{}}}\n\ndef policy({}):\n    import sys\n    return REPLIES[EPISODE]()\n".format(
        ", ".join(f"{name!r}: lambda: {expr}" for name, (expr, _) in replies.items()),
        args,
    )
    # The episode id is not told to the policy: it learns it from the episode process's frame (its own process).
    source = source.replace(
        "    return REPLIES[EPISODE]()",
        "    frame = sys._getframe()\n"
        "    while 'episode_id' not in frame.f_locals:\n        frame = frame.f_back\n"
        "    return REPLIES[frame.f_locals['episode_id']]()",
    )
    scenario = JobsScenario(simu_len=20) if track == "jobs" else WorkflowScenario(n_workflows=2, arrival_rate=0.01)
    episodes = [EpisodeSpec(name, key=KEY) for name in replies]
    _, outcomes = sandboxed(tmp_path, source, JOBS if track == "jobs" else FLOWS, scenario, episodes)
    for (name, (_, status)), outcome in zip(replies.items(), outcomes, strict=True):
        assert (name, outcome.status) == (name, status), outcome.message


# =====================================================================================================================
# 3. The view is the truth
# =====================================================================================================================

# Decides like the baseline, then writes through everything reachable from its arguments: every list, dict, set
# and numpy array (made writeable first, views included), and every attribute, frozen ones by object.__setattr__.
DEEP_VANDAL = """
    import gc

    import numpy as np

    def wreck(root):
        seen, todo = set(), [root]
        while todo:
            obj = todo.pop()
            if id(obj) in seen or isinstance(obj, (type, type(wreck), type(gc))):
                continue
            seen.add(id(obj))
            todo.extend(gc.get_referents(obj))
            todo.extend(getattr(obj, "__dict__", {}).values())  # before they are zeroed below
            if isinstance(obj, np.ndarray):
                base = obj
                while isinstance(base, np.ndarray):
                    try:
                        base.flags.writeable = True
                    except ValueError:
                        pass
                    base = base.base
                try:
                    obj[...] = 7
                except (ValueError, TypeError):
                    pass
            elif isinstance(obj, list):
                obj.reverse()
                obj.append(None)
            elif isinstance(obj, dict):
                for k in list(obj)[:1]:
                    obj[k] = None
            elif isinstance(obj, set):
                obj.clear()
            for name in getattr(obj, "__slots__", ()) or list(getattr(obj, "__dict__", {})):
                try:
                    object.__setattr__(obj, name, 0)
                except (AttributeError, TypeError):
                    pass

    BASE = None

    def policy(*args):
        action = BASE(*args)
        wreck(list(args[:-1]))
        return action
"""


def test_a_deep_vandal_changes_nothing_it_sees_next(tmp_path: Path) -> None:
    jobs_src = textwrap.dedent(DEEP_VANDAL).replace(
        "BASE = None", "from layersched.sim.tracks.jobs_v1.baselines import BASELINES\nBASE = BASELINES['SJF']"
    )
    flows_src = textwrap.dedent(DEEP_VANDAL).replace(
        "BASE = None", "from layersched.sim.tracks.workflows_v1.baselines import Heft\nBASE = Heft()"
    )
    for name, track, scenario, baseline, src in (
        ("jobs", JOBS, JobsScenario(simu_len=25), "SJF", jobs_src),
        ("flows", FLOWS, WorkflowScenario(n_workflows=2, arrival_rate=0.01, vm_counts=(1, 1, 1)), "HEFT", flows_src),
    ):
        (tmp_path / name).mkdir()
        jobs, outcomes = sandboxed(tmp_path / name, src, track, scenario, [EpisodeSpec("k", key=KEY)])
        expected = in_process(track, scenario, jobs[0], baseline)
        assert (outcomes[0].status, outcomes[0].message) == ("ok", "")
        assert outcomes[0].trace_hash == trace_hash(list(expected.actions))
        assert outcomes[0].metrics == expected.metrics


# Reaches past its view into the replica that builds it (the caller's frame) and rewrites the replica's truth: a
# workflows-v1 ViewKeeper is built from deltas, so its next views stay wrong. Only the policy's own episode suffers:
# what it did is its fault (crash), the trusted side is unaffected.
KEEPER_TAMPER = """
    import sys

    from layersched.sim.tracks.workflows_v1.baselines import Heft

    heft = Heft()
    done = []

    def policy(view, candidates, rng):
        replica = sys._getframe(1).f_locals["self"]
        if not done:
            done.append(1)
            replica.keeper.static.clear()  # every workflow forgotten: the next view cannot be built
        return heft(view, candidates, rng)
"""


def test_tampering_with_the_replica_only_harms_the_policy(tmp_path: Path) -> None:
    scenario = WorkflowScenario(n_workflows=2, arrival_rate=0.01)
    _, (outcome,) = sandboxed(tmp_path, KEEPER_TAMPER, FLOWS, scenario, [EpisodeSpec("k", key=KEY)])
    assert outcome.status == "crash", outcome.message
    assert outcome.step is not None and outcome.step >= 1 and "KeyError" in outcome.message


# =====================================================================================================================
# 4. Determinism: the trusted side gives the same payloads, trace and metrics whatever the hash seed
# =====================================================================================================================

DETERMINISM_SCRIPT = r"""
import hashlib, json, random, sys
from layersched.sim.episodes import EpisodeSpec
from layersched.sim.keyed_random import KeyedRandom
from layersched.sim.tracks import get_track
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario

KEY = bytes(range(100, 132))
out = {}
RUNS = [("jobs-v1", JobsScenario(), "Random")]
RUNS += [("workflows-v1", WorkflowScenario(), b) for b in ("Random", "HEFT", "MinMin")]
for name, scenario, baseline in RUNS:
    track = get_track(name)
    payloads = hashlib.sha256()
    sim, rep = track.simulator(scenario), track.replica(scenario)
    episode = sim.episode(KeyedRandom(KEY, "d"))
    rep.start(episode.start_message())
    payload, policy, rng, actions = episode.first_decision(), track.baseline(baseline), random.Random(5), []
    while payload is not None:
        payloads.update(json.dumps(payload).encode())
        action = episode.check(rep.decide(policy, payload, len(actions), rng), len(actions))
        actions.append(action)
        got = []
        payload = got[0] if episode.advance(action, got.append) else None
    out[name + baseline] = [payloads.hexdigest(), actions, repr(episode.metrics())]
print(json.dumps(out))
"""


def test_the_trusted_side_is_deterministic_under_any_hash_seed() -> None:
    results = []
    for hash_seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", DETERMINISM_SCRIPT], env=env, capture_output=True, text=True, check=True
        )
        results.append(json.loads(done.stdout))
    assert results[0] == results[1] == results[2]


def test_the_deep_vandal_does_write_through_a_view() -> None:
    # The vandal above is not a no-op: in-process, on a view it is handed, it rewrites the arrays and objects.
    from layersched.sim.tracks.jobs_v1.env import JobsEnv
    from layersched.sim.tracks.jobs_v1.view import JobsView
    from layersched.sim.tracks.jobs_v1.workload import draw_jobs, workload_state

    namespace: dict[str, Any] = {}
    exec(textwrap.dedent(DEEP_VANDAL), namespace)
    scenario = JobsScenario()
    env = JobsEnv(scenario, draw_jobs(scenario, workload_state(random.Random(1))))
    view = JobsView(dataclasses.replace(scenario), env.payload())
    free, slots, scenario_copy = view.free, view.slots, view.scenario
    namespace["wreck"]([view])
    assert (free == 7).all() and slots[-1] is None and scenario_copy.num_nw == 0 and view.time == 0 == view.free


# =====================================================================================================================
# 5. The channel under the tracks' large payloads (found while reading the driver; a sandbox-level matter)
# =====================================================================================================================


def _driver_sending_on(conn: Any) -> Any:
    """The driver's own send (``EpisodeDriver._send``) on ``conn``, with the default limits' deadline."""
    from layersched.worker.sandbox.driver import EpisodeDriver
    from layersched.worker.sandbox.limits import SandboxLimits

    driver = object.__new__(EpisodeDriver)
    driver.conn, driver._send_seconds = conn, SandboxLimits().decision_seconds / 2
    return driver


def test_a_send_after_a_polled_reply_has_a_deadline() -> None:
    """Fixed: FrameReader._poll leaves the socket blocking (settimeout(None)) when its poll finds the reply, and the
    driver's next send of a task (workflows-v1 payloads can exceed the socket buffer) had no deadline if the
    sandbox stopped reading (LAYERSCHED_SANDBOX_POLL_US only). The driver now gives every send one."""
    import socket
    import threading

    from layersched.worker.sandbox import protocol

    trusted, sandbox = socket.socketpair()
    try:
        reader = protocol.FrameReader(trusted, max_size=protocol.MAX_FRAME_FROM_SANDBOX)
        # The sandbox replies at once (it can: the nonce is at the head of the task frame) and then reads no more.
        sandbox.sendall(protocol.encode_action(0, 0, 1))
        time.sleep(0.05)
        assert reader.recv(time.monotonic() + 2.0, poll_seconds=0.001)["type"] == "action"
        task = protocol.encode_task(1, {"cand": [[w, i] for w in range(400) for i in range(70)]}, 2)
        assert len(task) > 212992  # more than a Unix socket buffers by default
        sent = threading.Event()

        def announce() -> None:  # driver._announce
            _driver_sending_on(trusted)._send(task)
            sent.set()

        threading.Thread(target=announce, daemon=True).start()
        # Safe: the send gives up within the decision deadline (2 s), as it does after a non-polled reply.
        assert sent.wait(5.0), "the trusted side's send of the next task blocks for ever"
    finally:
        sandbox.close()
        trusted.close()


def test_a_send_after_a_plain_reply_has_a_deadline() -> None:
    # The same without polling (the default): the timeout recv left on the socket bounds the send.
    import socket
    import threading

    from layersched.worker.sandbox import protocol

    trusted, sandbox = socket.socketpair()
    try:
        reader = protocol.FrameReader(trusted, max_size=protocol.MAX_FRAME_FROM_SANDBOX)
        sandbox.sendall(protocol.encode_action(0, 0, 1))
        assert reader.recv(time.monotonic() + 2.0)["type"] == "action"
        task = protocol.encode_task(1, {"cand": [[w, i] for w in range(400) for i in range(70)]}, 2)
        sent = threading.Event()

        def announce() -> None:
            _driver_sending_on(trusted)._send(task)
            sent.set()

        threading.Thread(target=announce, daemon=True).start()
        assert sent.wait(5.0)
    finally:
        sandbox.close()
        trusted.close()
