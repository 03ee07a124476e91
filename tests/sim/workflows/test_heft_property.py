"""On any static DAG, the environment carrying out HEFT's plan (placed in planned start order at time 0) runs every
task exactly where and when the plan says: the queue rules (placement order, inputs then room) are the paper's
processor model. Costs are integers and bandwidths powers of two, so both sides' arithmetic is exact."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from layersched.sim.tracks.play import play_episode
from layersched.sim.tracks.workflows_v1.baselines import Heft
from layersched.sim.tracks.workflows_v1.dag import StaticDag
from layersched.sim.tracks.workflows_v1.heft import Timeline, heft
from layersched.sim.tracks.workflows_v1.sandbox import WorkflowReplica
from layersched.sim.tracks.workflows_v1.scenario import static_scenario
from tests.sim.workflows.reference_heft import reference_heft
from tests.sim.workflows.test_env import Spy, plan_follower


@st.composite
def dags(draw: st.DrawFn) -> StaticDag:
    n = draw(st.integers(1, 14))
    p = draw(st.integers(1, 4))
    costs = []
    for _ in range(n):
        row = draw(st.lists(st.one_of(st.none(), st.integers(1, 30)), min_size=p, max_size=p))
        if all(c is None for c in row):
            row[draw(st.integers(0, p - 1))] = draw(st.integers(1, 30))
        costs.append(row)
    edges = [
        (u, v, draw(st.integers(0, 25)))
        for v in range(n)
        for u in range(v)
        if draw(st.booleans()) and draw(st.booleans())  # about a quarter of the pairs
    ]
    bandwidth = [[draw(st.sampled_from([1, 2, 4])) for _ in range(p)] for _ in range(p)]
    startup = [[draw(st.integers(0, 3)) for _ in range(p)] for _ in range(p)]
    ids = [f"t{i}" for i in range(n)]
    order = draw(st.permutations(range(n)))  # task indices need not be topological
    rename = {old: new for new, old in enumerate(order)}
    return StaticDag.build(
        [ids[i] for i in order],
        [(rename[u], rename[v], d) for u, v, d in edges],
        [costs[i] for i in order],
        bandwidth,
        startup,
    )


@settings(max_examples=80, deadline=None)
@given(dags())
def test_the_environment_carries_out_any_heft_plan_exactly(dag: StaticDag) -> None:
    scenario, state = static_scenario(dag), {}
    actions, metrics = play_episode(
        Spy(scenario, state), WorkflowReplica(scenario), plan_follower(dag), random.Random(0), random.Random(0)
    )
    plan = heft(dag)
    episode = state["episode"]
    assert {g: (episode.vm[g], episode.start[g], episode.finish[g]) for g in range(dag.n_tasks)} == {
        s.task: (s.proc, s.start, s.finish) for s in plan.slots
    }
    assert metrics.makespan == plan.makespan
    assert len(actions) == dag.n_tasks


@settings(max_examples=80, deadline=None)
@given(dags())
def test_the_online_heft_baseline_makes_the_planners_schedule_on_a_static_dag(dag: StaticDag) -> None:
    scenario, state = static_scenario(dag), {}
    _, metrics = play_episode(
        Spy(scenario, state), WorkflowReplica(scenario), Heft(), random.Random(0), random.Random(0)
    )
    plan = heft(dag)
    episode = state["episode"]
    assert {g: (episode.vm[g], episode.start[g], episode.finish[g]) for g in range(dag.n_tasks)} == {
        s.task: (s.proc, s.start, s.finish) for s in plan.slots
    }
    assert metrics.makespan == plan.makespan


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 10)), max_size=8),
    st.integers(0, 50),
    st.integers(0, 12),
)
def test_the_one_task_at_a_time_gap_scan_agrees_with_the_general_rule(booked, ready, duration) -> None:
    # Book non-overlapping intervals (the only kind a one-at-a-time processor holds), then ask both rules.
    line: Timeline[float] = Timeline()
    t = 0
    for gap, length in booked:
        start = t + gap
        line.book(float(start), float(start + length))
        t = start + length
    fast = line.earliest_start(float(ready), float(duration))
    general = min(
        c for c in sorted({float(ready), *(f for _, f, _, _ in line.booked if f > ready)})
        if line._fits(c, c + duration, 1, 1)
    )  # fmt: skip
    assert fast == general


@st.composite
def any_dags(draw: st.DrawFn) -> StaticDag:
    """DAGs with fractional costs, data, bandwidths and startups (no exact binary sums)."""
    dag = draw(dags())
    values = st.sampled_from([0.1, 0.5, 1, 2.5, 3, 7, 1 / 3])
    p = dag.n_procs
    return StaticDag.build(
        dag.ids,
        [(u, v, d * draw(values)) for u, v, d in dag.edges],
        [[None if c is None else c * draw(values) for c in row] for row in dag.costs],
        [[draw(values) for _ in range(p)] for _ in range(p)],
        [[draw(values) for _ in range(p)] for _ in range(p)],
    )


@settings(max_examples=150, deadline=None)
@given(any_dags())
def test_heft_schedules_as_a_plain_transcription_of_the_paper(dag: StaticDag) -> None:
    ranks, schedule = reference_heft(dag)
    plan = heft(dag)
    assert plan.ranks == tuple(float(r) for r in ranks)
    assert {s.task: (s.proc, s.start, s.finish) for s in plan.slots} == {
        i: (q, float(s), float(f)) for i, (q, s, f) in schedule.items()
    }
