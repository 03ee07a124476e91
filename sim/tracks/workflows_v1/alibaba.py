"""Import the DAG jobs of Alibaba's cluster-trace-v2018 ``batch_task`` table.

The table has no header; its columns, in the trace's schema order, are ``task_name, instance_num, job_name,
task_type, status, start_time, end_time, plan_cpu, plan_mem``. A job's DAG is in its task names: a type letter,
the task's number, then the numbers it depends on, by ``_`` (``M1`` has no parents, ``M2_1`` depends on task 1,
``M5_3_4`` on 3 and 4). A name outside that pattern (the trace's ``task_...`` independent tasks) is a task without
dependencies, named as it is.

Per task: work ``end_time - start_time`` (s); cores ``plan_cpu / 100`` (the trace's 100 is one core); memory
``plan_mem`` (the trace normalises it to 0..100 of a machine) as that share of 32 GB, the small VM type's memory;
no data on edges (the trace records none). Rows keep their order within a job; jobs are returned in the order
their first row appears.

Errors name the job and the task: an empty field, a number that does not parse, a task named twice, a
dependency on a task the job does not have, a cycle.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from pathlib import Path

from layersched.sim.tracks.workflows_v1.dag import edge_order
from layersched.sim.tracks.workflows_v1.errors import WorkflowError
from layersched.sim.tracks.workflows_v1.structure import WorkflowStructure

COLUMNS = (
    "task_name", "instance_num", "job_name", "task_type", "status", "start_time", "end_time", "plan_cpu", "plan_mem"
)  # fmt: skip
MEMORY_GB_PER_100 = 32.0
_DAG_NAME = re.compile(r"[A-Za-z]+(\d+)((?:_\d+)*)")


def _float(value: str, where: str, column: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise WorkflowError(f"{where}: {column} {value!r} is not a number") from None


def parse_batch_tasks(rows: Iterable[list[str]], *, source: str = "batch_task") -> list[WorkflowStructure]:
    """Every job of ``rows`` (the table's rows as lists of strings) as a ``WorkflowStructure``."""
    jobs: dict[str, list[tuple[str, float, float, float, tuple[str, ...]]]] = {}
    seen: set[tuple[str, str]] = set()
    for line, row in enumerate(rows, 1):
        if len(row) != len(COLUMNS):
            raise WorkflowError(
                f"{source} row {line}: {len(row)} fields, expected {len(COLUMNS)} ({', '.join(COLUMNS)})"
            )
        fields = dict(zip(COLUMNS, (f.strip() for f in row), strict=True))
        job, task = fields["job_name"], fields["task_name"]
        where = f"job {job or '?'!r} task {task or '?'!r}"
        for column in ("task_name", "job_name", "start_time", "end_time", "plan_cpu", "plan_mem"):
            if not fields[column]:
                raise WorkflowError(f"{source} row {line}: {where}: {column} is empty")
        start, end = _float(fields["start_time"], where, "start_time"), _float(fields["end_time"], where, "end_time")
        if end < start:
            raise WorkflowError(f"{where}: end_time {end:g} is before start_time {start:g}")
        cores = _float(fields["plan_cpu"], where, "plan_cpu") / 100.0
        memory = _float(fields["plan_mem"], where, "plan_mem") / 100.0 * MEMORY_GB_PER_100
        match = _DAG_NAME.fullmatch(task)
        key, parents = (match.group(1), tuple(match.group(2).split("_")[1:])) if match else (task, ())
        if (job, key) in seen:
            raise WorkflowError(f"{where}: job {job!r} has task {key!r} twice")
        seen.add((job, key))
        jobs.setdefault(job, []).append((key, end - start, cores, memory, parents))
    return [_structure(job, tasks) for job, tasks in jobs.items()]


def _structure(job: str, tasks: list[tuple[str, float, float, float, tuple[str, ...]]]) -> WorkflowStructure:
    index = {key: i for i, (key, *_) in enumerate(tasks)}
    edges = []
    for i, (key, _, _, _, parents) in enumerate(tasks):
        for p in parents:
            if p not in index:
                raise WorkflowError(f"job {job!r} task {key!r}: depends on task {p!r}, which the job does not have")
            edges.append((index[p], i, 0.0))
    ids = tuple(key for key, *_ in tasks)
    try:
        edge_order(ids, edges)
    except WorkflowError as exc:
        raise WorkflowError(f"job {job!r}: {exc}") from None
    return WorkflowStructure(
        job, ids, tuple(t[1] for t in tasks), tuple(t[2] for t in tasks), tuple(t[3] for t in tasks), tuple(edges)
    )


def load_batch_tasks(path: Path) -> list[WorkflowStructure]:
    """``parse_batch_tasks`` of a CSV file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkflowError(f"cannot read {str(path)!r}: {exc.strerror}") from None
    return parse_batch_tasks(csv.reader(io.StringIO(text)), source=path.name)
