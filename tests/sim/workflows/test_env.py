"""The rules of workflows-v1's episode: HEFT's plan carried out, queues, the view as the truth, the checks."""

from __future__ import annotations

import random

import numpy as np
import pytest

from layersched.sim.errors import PolicyError
from layersched.sim.tracks.play import play_episode
from layersched.sim.tracks.workflows_v1 import TRACK
from layersched.sim.tracks.workflows_v1.dag import parse_dag
from layersched.sim.tracks.workflows_v1.env import WorkflowEpisode, build_cluster, draw_workflows
from layersched.sim.tracks.workflows_v1.families import FAMILIES, SIZES, draw_workflow
from layersched.sim.tracks.workflows_v1.heft import heft
from layersched.sim.tracks.workflows_v1.sandbox import WorkflowReplica, WorkflowSimulator, payload
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario, static_scenario
from layersched.sim.tracks.workflows_v1.view import WAIT, TaskView, ViewKeeper, WorkflowView
from tests.sim.workflows.paper import MAKESPAN, paper_json

PAPER = parse_dag(paper_json())
SMALL = WorkflowScenario(n_workflows=3, arrival_rate=0.01)


def plan_follower(dag):
    """Carries out ``heft(dag)``'s plan: each decision, the unplaced task of earliest planned start on its processor."""
    order = [(s.task, s.proc) for s in heft(dag).by_start()]

    def policy(view: WorkflowView, candidates: list[TaskView], rng: random.Random) -> int:
        placed = {t.index for t in view.workflows[0].tasks if t.status != "waiting"}
        task, proc = next((t, p) for t, p in order if t not in placed)
        candidate = [t.index for t in view.candidates].index(task)
        return view.action(candidate, proc)

    return policy


class Spy(WorkflowSimulator):
    """Keeps the trusted episode it hands out (and its start message) in ``state``, for the test to inspect."""

    def __init__(self, scenario, state):
        super().__init__(scenario)
        self.state = state

    def episode(self, workload):
        trusted = super().episode(workload)
        self.state["episode"] = trusted.episode
        self.state["start"] = trusted.start_message()
        return trusted


def test_the_environment_carrying_out_heft_plan_reproduces_the_paper():
    scenario, state = static_scenario(PAPER), {}
    actions, metrics = play_episode(
        Spy(scenario, state), WorkflowReplica(scenario), plan_follower(PAPER), random.Random(0), random.Random(0)
    )
    assert metrics.makespan == MAKESPAN
    assert metrics.mean_completion == MAKESPAN  # one workflow, arriving at 0
    episode = state["episode"]
    slots = {s.task: (s.proc, s.start, s.finish) for s in heft(PAPER).slots}
    assert {g: (episode.vm[g], episode.start[g], episode.finish[g]) for g in range(10)} == slots
    assert len(actions) == 10  # ten placements, never a wait


def test_the_online_heft_baseline_makes_the_papers_makespan():
    run = TRACK.run_episode(static_scenario(PAPER), TRACK.baseline("HEFT"), random.Random(0), random.Random(0))
    assert run.metrics.makespan == MAKESPAN
    assert len(run.actions) == 10 and WAIT not in run.actions  # the whole plan queued at time 0


def truth_checking(policy):
    """Wraps ``policy``: each decision, its view must equal the view a fresh keeper builds from the whole truth."""
    state = {}

    def checked(view, candidates, rng):
        episode = state["episode"]
        fresh = ViewKeeper(state["start"])
        fresh.apply(payload(episode, 0, everything=True))
        assert view == fresh.view()
        for wf in view.workflows.values():
            for t in wf.tasks:
                assert (t.finish is None) == (t.status != "done")  # no actual duration before it is over
        assert set(view.workflows) == {w for w in range(episode.arrived) if episode.done_at[w] is None}
        return policy(view, candidates, rng)

    return checked, state


@pytest.mark.parametrize("name", TRACK.baseline_names)
def test_every_view_is_the_whole_truth_and_only_the_present(name):
    checked, state = truth_checking(TRACK.baseline(name))
    _, metrics = play_episode(Spy(SMALL, state), WorkflowReplica(SMALL), checked, random.Random(3), random.Random(3))
    assert metrics.mean_completion > 0


def vandal(policy):
    def wrecks(view, candidates, rng):
        action = policy(view, candidates, rng)
        for wf in view.workflows.values():
            for t in wf.tasks:
                t.status, t.means, t.finish = "done", (1.0,) * view.n_vms, 0.0
        view.candidates.clear()
        for vm in view.vms:
            vm.queue.append((99, 99))
            vm.free_cores = 0
        return action

    return wrecks


@pytest.mark.parametrize("name", ["HEFT", "FCFS"])
def test_a_view_vandal_makes_the_baselines_actions(name):
    plain = TRACK.run_episode(SMALL, TRACK.baseline(name), random.Random(5), random.Random(5))
    wrecked = TRACK.run_episode(SMALL, vandal(TRACK.baseline(name)), random.Random(5), random.Random(5))
    assert wrecked.actions == plain.actions
    assert wrecked.metrics == plain.metrics


def test_the_same_seed_plays_the_same_episode():
    runs = [TRACK.run_episode(SMALL, TRACK.baseline("Random"), random.Random(9), random.Random(1)) for _ in range(2)]
    assert runs[0].actions == runs[1].actions and runs[0].metrics == runs[1].metrics
    other = TRACK.run_episode(SMALL, TRACK.baseline("Random"), random.Random(10), random.Random(1))
    assert other.metrics != runs[0].metrics


def test_run_policies_equals_run_episode_per_policy():
    policies = [(TRACK.baseline(n), random.Random(2)) for n in TRACK.baseline_names]
    together = TRACK.run_policies(SMALL, policies, random.Random(4))
    for name, run in zip(TRACK.baseline_names, together, strict=True):
        alone = TRACK.run_episode(SMALL, TRACK.baseline(name), random.Random(4), random.Random(2))
        assert (run.actions, run.metrics) == (alone.actions, alone.metrics)


def first_episode(scenario=SMALL):
    episode = WorkflowEpisode(scenario, random.Random(0))
    assert episode.first()
    return episode


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (1.0, "step 4: action 1.0 (float) is not an int (return int(...))"),
        ("0", "step 4: action '0' (str) is not an int"),
        (True, "step 4: action True (bool) is not an int"),
        (-2, "step 4: action -2 is not -1 (wait) or one of 0..{limit} ({n} candidates x 5 VMs)"),
        (10**6, "step 4: action 1000000 is not -1 (wait) or one of 0..{limit} ({n} candidates x 5 VMs)"),
        (-1, "step 4: wait (-1) while no task runs or is queued; place one of the {n} candidates"),
    ],
    ids=["float", "str", "bool", "negative", "too-large", "idle-wait"],
)
def test_an_invalid_action_names_step_and_value(value, message):
    episode = first_episode()
    n = len(episode.candidates)
    with pytest.raises(PolicyError) as info:
        episode.check(value, 4)
    assert str(info.value) == message.format(limit=n * 5 - 1, n=n)
    assert (info.value.step, info.value.value) == (4, value)


def test_a_vm_that_cannot_run_the_task_is_refused():
    raw = {"tasks": ["a"], "edges": [], "W": [[2, None]], "bandwidth": [[1, 1], [1, 1]]}
    episode = first_episode(static_scenario(parse_dag(raw)))
    with pytest.raises(PolicyError) as info:
        episode.check(1, 0)
    assert str(info.value) == "step 0: action 1 puts task (0, 0) (needs 1 cores, 1 GB) on VM 1, which cannot run it"
    assert episode.check(0, 0) == 0


def test_a_queue_starts_in_placement_order_once_inputs_arrive_and_room_exists():
    # a -> b with 4 GB over bandwidth 2 (2 s), and c independent: b queued first on P1 holds c behind it.
    raw = {"tasks": ["a", "b", "c"], "edges": [["a", "b", 4]], "W": [[3, 3], [1, 1], [1, 1]],
           "bandwidth": [[1, 2], [2, 1]]}  # fmt: skip
    episode = first_episode(static_scenario(parse_dag(raw)))
    assert [episode.key[g] for g in episode.candidates] == [(0, 0), (0, 2)]
    assert episode.apply(0 * 2 + 0)  # a on P0: starts at 0
    assert [episode.key[g] for g in episode.candidates] == [(0, 1), (0, 2)]
    assert episode.apply(0 * 2 + 1)  # b on P1: waits for a (finish 3) and its data (2 s)
    assert (episode.start[0], episode.start[1]) == (0.0, None)
    assert not episode.apply(0 * 2 + 1)  # c on P1, behind b: nothing left to place, so the episode runs to its end
    assert (episode.start[1], episode.finish[1], episode.start[2], episode.finish[2]) == (5.0, 6.0, 6.0, 7.0)


def test_a_vm_runs_tasks_side_by_side_while_cores_and_memory_fit():
    episode = first_episode(WorkflowScenario(vm_counts=(0, 0, 1), n_workflows=1, arrival_rate=0, families=("etl",)))
    sources = list(episode.candidates)
    while episode.candidates and episode.candidates[0] in sources and episode.apply(0):
        pass  # every source on the one VM, at time 0
    running = episode.running[0]
    assert len(running) > 1
    assert sum(episode.spec[g].cores for g in running) <= 32
    assert sum(episode.spec[g].memory_gb for g in running) <= 128


@pytest.mark.parametrize("family", FAMILIES)
def test_families_have_their_sizes_and_shapes(family):
    rng = np.random.default_rng(0)
    for _ in range(50):
        tasks = draw_workflow(family, rng)
        lo, hi = SIZES[family]
        assert lo <= len(tasks) <= hi
        assert all(p < i for i, t in enumerate(tasks) for p, _ in t.parents)
        assert all(1 <= t.cores <= 4 and 1 <= t.memory_gb <= 16 and 1 <= t.priority <= 5 for t in tasks)
        sinks = [i for i in range(len(tasks)) if not any(i == p for t in tasks for p, _ in t.parents)]
        if family == "montecarlo":
            assert all(len(t.parents) in (0, 3, 4, 5) or len(t.parents) == len(tasks[-1].parents) for t in tasks)
            assert sinks[-1] == len(tasks) - 1
        elif family == "ml":
            chain = len(tasks) - int(0.3 * len(tasks))
            assert all(tasks[s].parents == ((s - 1, tasks[s].parents[0][1]),) for s in range(1, chain))
            assert all(len(t.parents) == 1 for t in tasks[1:])
        else:
            roots = [t for t in tasks if not t.parents]
            assert len(roots) == len(tasks) - max(1, len(tasks) // 20) - 1
            assert sinks == [len(tasks) - 1]


def test_family_durations_follow_their_distributions():
    rng = np.random.default_rng(1)
    work = {f: [t.work for _ in range(300) for t in draw_workflow(f, rng)] for f in FAMILIES}
    # Medians: LogNormal e^4.5 = 90.0, Gamma(3, 40) ~ 107.0, Weibull(100, 1.2) 100 ln(2)^(1/1.2) ~ 73.7.
    assert np.median(work["montecarlo"]) == pytest.approx(90.0, rel=0.05)
    assert np.median(work["ml"]) == pytest.approx(107.0, rel=0.05)
    assert np.median(work["etl"]) == pytest.approx(73.7, rel=0.05)


@pytest.mark.parametrize("rate", [0.004, 0.0], ids=["poisson", "all-at-0"])
def test_the_episode_draws_each_workflow_at_its_arrival_as_the_whole_draw_does(rate: float) -> None:
    """The lazy draw (a workflow drawn when it arrives) is the stream ``draw_workflows`` draws all at once."""
    scenario = WorkflowScenario(n_workflows=30, arrival_rate=rate)
    whole = draw_workflows(scenario, build_cluster(scenario), random.Random(7))
    episode = WorkflowEpisode(scenario, random.Random(7))
    more = episode.first()
    assert episode.arrived == (1 if rate else 30)
    n_vms = len(episode.cluster.cores)
    while more:
        g = episode.candidates[0]
        more = episode.apply(next(v for v in range(n_vms) if episode.allowed(g, v)))
    assert episode.workflows == whole
    assert episode.key == [(wf.id, i) for wf in whole for i in range(len(wf.tasks))]
