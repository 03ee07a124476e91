"""The importers of real workflow structures: WfFormat 1.5 JSON and Alibaba's batch_task rows (samples written
for these tests in tests/sim/workflows/data/), and their errors."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest

from layersched.sim.tracks.workflows_v1 import TRACK
from layersched.sim.tracks.workflows_v1.alibaba import load_batch_tasks, parse_batch_tasks
from layersched.sim.tracks.workflows_v1.errors import WorkflowError
from layersched.sim.tracks.workflows_v1.heft import heft
from layersched.sim.tracks.workflows_v1.scenario import static_scenario
from layersched.sim.tracks.workflows_v1.vms import VM_TYPES
from layersched.sim.tracks.workflows_v1.wfformat import load_wfformat, parse_wfformat

DATA = Path(__file__).parent / "data"
DIAMOND = json.loads((DATA / "diamond.wfformat.json").read_text())


def test_a_wfformat_instance_reads_its_tasks_edges_and_data():
    wf = load_wfformat(DATA / "diamond.wfformat.json")
    assert wf.name == "diamond"
    assert wf.ids == ("split_1", "left_1", "right_1", "merge_1")
    assert wf.work == (10.0, 40.0, 30.5, 20.0)
    assert wf.cores == (1.0, 2.0, 1.0, 1.5)
    assert wf.memory_gb == (1.0, 4.0, 1.0, 1.0)
    # right_1 -> merge_1 is listed by the child only, and carries a file of 0 bytes; in.dat is split's input, so it
    # is no edge's data; l.dat (2 GB) is what left reads of split's outputs.
    assert wf.edges == ((0, 1, 2.0), (0, 2, 0.5), (1, 3, 0.25), (2, 3, 0.0))


def test_an_imported_workflow_runs_through_heft_and_the_static_scenario():
    dag = load_wfformat(DATA / "diamond.wfformat.json").static_dag(VM_TYPES)
    assert dag.costs[1] == (40.0, 32.0, 40.0 / 1.5)
    plan = heft(dag)
    run = TRACK.run_episode(static_scenario(dag), TRACK.baseline("HEFT"), random.Random(0), random.Random(0))
    assert run.metrics.makespan == pytest.approx(plan.makespan)


def _mutated(path: list, value):
    raw = copy.deepcopy(DIAMOND)
    node = raw
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return raw


SPEC = ["workflow", "specification"]
TASKS = [*SPEC, "tasks"]


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (["schemaVersion"], "1.4", "WfFormat 'diamond': schemaVersion must be one of 1.5, 1.6, got '1.4'"),
        ([*TASKS, 1, "parents"], ["split_1", "ghost"],
         "WfFormat 'diamond': task 'left_1' names parent 'ghost', which is not a task"),
        ([*TASKS, 0, "parents"], ["merge_1"], "WfFormat 'diamond': the DAG has a cycle through task 'split_1'"),
        ([*TASKS, 3, "inputFiles"], ["nope.dat"],
         "WfFormat 'diamond': task 'merge_1' names file 'nope.dat' in inputFiles, which is not declared"),
        ([*TASKS, 2, "id"], "left_1", "WfFormat 'diamond': task 'left_1' is declared twice"),
        (["workflow", "execution", "tasks", 2], {"id": "right_1"},
         "WfFormat 'diamond': task 'right_1' has no runtimeInSeconds in workflow.execution.tasks"),
        ([*SPEC, "files", 0, "sizeInBytes"], -1, "WfFormat 'diamond' file 'in.dat' size must be a number >= 0, got -1"),
        ([*TASKS, 1, "children"], ["left_1"], "WfFormat 'diamond': task 'left_1' depends on itself"),
    ],
    ids=["version", "unknown-parent", "cycle", "unknown-file", "duplicate-task", "no-runtime", "negative-size",
         "self-loop"],
)  # fmt: skip
def test_a_bad_wfformat_instance_is_an_error_naming_the_task(path, value, message):
    with pytest.raises(WorkflowError) as exc:
        parse_wfformat(_mutated(path, value))
    assert str(exc.value) == message


def test_batch_task_rows_make_one_dag_per_job():
    jobs = load_batch_tasks(DATA / "batch_task.csv")
    assert [j.name for j in jobs] == ["j_1", "j_2", "j_3"]
    j1 = jobs[0]
    assert j1.ids == ("1", "2", "3", "4")
    assert j1.edges == ((0, 1, 0.0), (1, 3, 0.0), (2, 3, 0.0))  # R2_1: 1 -> 2; J4_2_3: 2 -> 4 and 3 -> 4
    assert j1.work == (60.0, 30.0, 30.0, 60.0)
    assert j1.cores == (1.0, 2.0, 0.5, 1.0)
    assert j1.memory_gb == pytest.approx((0.16, 0.32, 0.08, 0.16))
    assert jobs[1].ids == ("task_Nzg3ODAwNDgzMTAwNTc2NTQ2Mw==",) and jobs[1].edges == ()
    assert jobs[2].cores == (4.0,)


ROW = ["M1", "1", "j_9", "1", "Terminated", "0", "10", "100", "0.5"]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([ROW, ["R2_5", *ROW[1:]]], "job 'j_9' task '2': depends on task '5', which the job does not have"),
        ([["M1_2", *ROW[1:]], ["R2_1", *ROW[1:]]], "job 'j_9': the DAG has a cycle through task '1'"),
        ([["M1", "1", "j_9", "1", "Terminated", "0", "", "100", "0.5"]],
         "batch_task row 1: job 'j_9' task 'M1': end_time is empty"),
        ([["", *ROW[1:]]], "batch_task row 1: job 'j_9' task '?': task_name is empty"),
        ([ROW, ROW], "job 'j_9' task 'M1': job 'j_9' has task '1' twice"),
        ([ROW[:8]], "batch_task row 1: 8 fields, expected 9 (task_name, instance_num, job_name, task_type, status, "
                    "start_time, end_time, plan_cpu, plan_mem)"),
        ([["M1", "1", "j_9", "1", "Terminated", "0", "ten", "100", "0.5"]],
         "job 'j_9' task 'M1': end_time 'ten' is not a number"),
        ([["M1", "1", "j_9", "1", "Terminated", "20", "10", "100", "0.5"]],
         "job 'j_9' task 'M1': end_time 10 is before start_time 20"),
    ],
    ids=["missing-parent", "cycle", "empty-field", "empty-name", "duplicate", "short-row", "not-a-number", "backwards"],
)  # fmt: skip
def test_bad_batch_task_rows_are_errors_naming_job_and_task(rows, message):
    with pytest.raises(WorkflowError) as exc:
        parse_batch_tasks(rows)
    assert str(exc.value) == message
