"""HEFT as the paper defines it, pinned on the paper's own example."""

from __future__ import annotations

import pytest

from layersched.sim.tracks.workflows_v1.dag import parse_dag
from layersched.sim.tracks.workflows_v1.errors import WorkflowError
from layersched.sim.tracks.workflows_v1.heft import Timeline, exact_ranks, heft
from tests.sim.workflows.paper import MAKESPAN, RANKS, paper_json


def test_the_papers_upward_ranks():
    plan = heft(parse_dag(paper_json()))
    assert plan.ranks == pytest.approx(RANKS, abs=5e-4)


def test_t2_and_t3_tie_exactly_and_the_lower_index_goes_first():
    ranks = exact_ranks(parse_dag(paper_json()))
    assert ranks[2] == ranks[3] == 80
    order = [s.task for s in heft(parse_dag(paper_json())).slots]
    assert order.index(2) < order.index(3)


def test_the_papers_makespan_and_schedule():
    plan = heft(parse_dag(paper_json()))
    assert plan.makespan == MAKESPAN
    # Fig. 4(a) of the paper, each entry checked by hand: e.g. T6 (the paper's n7) finishes at 49 on P2 after T4,
    # against 58 on P0 and 66 on P1 (T2's 23 units of data arrive at 51 off P2).
    got = {f"T{s.task}": (s.proc, s.start, s.finish) for s in plan.slots}
    assert got == {
        "T0": (2, 0, 9), "T2": (2, 9, 28), "T3": (1, 18, 26), "T1": (0, 27, 40), "T4": (2, 28, 38),
        "T5": (1, 26, 42), "T8": (1, 56, 68), "T6": (2, 38, 49), "T7": (0, 57, 62), "T9": (1, 73, 80),
    }  # fmt: skip
    assert [f"T{s.task}" for s in plan.slots] == ["T0", "T2", "T3", "T1", "T4", "T5", "T8", "T6", "T7", "T9"]


def test_insertion_uses_an_idle_gap_between_booked_tasks():
    line: Timeline[float] = Timeline()
    line.book(0.0, 10.0)
    line.book(30.0, 40.0)
    assert line.earliest_start(5.0, 20.0) == 10.0  # fits exactly in [10, 30)
    assert line.earliest_start(5.0, 21.0) == 40.0  # does not: after the last


def test_a_multicore_timeline_runs_tasks_side_by_side_while_they_fit():
    line: Timeline[float] = Timeline(cores=4, memory=8)
    line.book(0.0, 10.0, 2, 4)
    assert line.earliest_start(0.0, 5.0, 2, 4) == 0.0
    line.book(0.0, 5.0, 2, 4)
    assert line.earliest_start(0.0, 5.0, 1, 1) == 5.0
    assert line.earliest_start(0.0, 5.0, 1, 5) == 10.0  # memory, not cores, is what is short until 10


def test_null_costs_keep_a_task_off_a_processor_and_out_of_its_mean():
    raw = {"tasks": ["a", "b"], "edges": [["a", "b", 4]], "W": [[2, None], [None, 3]], "bandwidth": [[1, 2], [2, 1]]}
    plan = heft(parse_dag(raw))
    assert plan.ranks == (2 + 4 / 2 + 3, 3)
    assert [(s.proc, s.start, s.finish) for s in plan.slots] == [(0, 0, 2), (1, 4, 7)]


@pytest.mark.parametrize(
    ("startup", "expected"),
    [(None, 2 + 4 + 3), (1.5, 2 + 1.5 + 4 + 3), ([1, 3], 2 + 2 + 4 + 3), ([[0, 1], [5, 0]], 2 + 3 + 4 + 3)],
    ids=["absent", "number", "per-sender", "matrix"],
)
def test_startup_latency_enters_the_mean_communication_cost(startup, expected):
    raw = {"tasks": ["a", "b"], "edges": [["a", "b", 4]], "W": [[2, None], [None, 3]], "bandwidth": [[1, 1], [1, 1]]}
    if startup is not None:
        raw["startup"] = startup
    assert heft(parse_dag(raw)).ranks[0] == expected


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"edges": [["T0", "T1", 1], ["T1", "T0", 1]]}, "the DAG has a cycle through task 'T0'"),
        ({"W": [[1, 2]] * 10}, "W row 0 (task 'T0') has 2 entries, but bandwidth names 3 processors"),
        ({"W": [[1, 2, 3]] * 9}, "W must have a row per task: 10 tasks, 9 rows"),
        ({"bandwidth": [[1, 1, 1], [1, 1], [1, 1, 1]]}, "bandwidth must be 3x3: row 1 has 2 entries"),
        ({"bandwidth": [[1, 0, 1], [1, 1, 1], [1, 1, 1]]}, "bandwidth[0][1] must be a positive number, got 0.0"),
        ({"edges": [["T0", "T99", 1]]}, "edge ['T0', 'T99', 1] names task 'T99', which is not in tasks"),
        ({"W": [[None, None, None]] * 10}, "task 'T0' can run on no processor (its W row is all null)"),
        ({"W": [["x", 1, 1]] * 10}, "W[0][0] must be a number, got 'x'"),
        ({"startup": [1, 2]}, "startup has 2 entries, but bandwidth names 3 processors"),
        ({"extra": 1}, "unknown key 'extra' (allowed: W, bandwidth, edges, startup, tasks)"),
    ],
    ids=["cycle", "W-columns", "W-rows", "bandwidth-ragged", "bandwidth-zero", "unknown-task", "all-null",
         "not-a-number", "startup-size", "unknown-key"],
)  # fmt: skip
def test_a_malformed_dag_is_an_error_naming_the_value(change, message):
    with pytest.raises(WorkflowError) as info:
        parse_dag({**paper_json(), **change})
    assert str(info.value) == message
