"""What a ``workflows-v1`` policy sees: ``WorkflowView``, rebuilt from scratch for every decision.

``ViewKeeper`` holds the truth the trusted side sent so far (each workflow's static part when it arrives, then each
task's state when it changes) and builds a new view from it per decision, so whatever a policy does to its view, the
next one is the truth again. The view holds the present only: tasks' mean durations per VM and the spread of the
actual ones, never an actual duration before the task has finished; no workflow before it arrives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

WAIT = -1
STATUS_NAMES = ("waiting", "queued", "running", "done")

TaskKey = tuple[int, int]


@dataclass(slots=True)
class TaskView:
    """One task of an arrived workflow. ``parents`` and ``children`` are ``(task index, data GB)`` in the same
    workflow; ``means[v]`` is its mean duration on VM v (None: cannot run there; the actual one is the mean times a
    factor of standard deviation ``spread``). ``status`` is waiting (not placed), queued, running or done; times are
    None until they happen (``ready``: when its parents had all finished)."""

    workflow: int
    index: int
    cores: int
    memory_gb: float
    priority: int
    parents: tuple[tuple[int, float], ...]
    children: tuple[tuple[int, float], ...]
    means: tuple[float | None, ...]
    status: str
    vm: int | None
    placed: float | None
    start: float | None
    finish: float | None
    ready: float | None

    @property
    def key(self) -> TaskKey:
        return (self.workflow, self.index)


@dataclass(slots=True)
class WorkflowInfo:
    """An arrived, unfinished workflow: its family, arrival time and all of its tasks (its whole DAG)."""

    id: int
    family: str
    arrival: float
    tasks: list[TaskView]


@dataclass(slots=True)
class VmView:
    """One VM: its capacity, speed and network card, what is free now, and its running and queued tasks (queue in
    the order it will start them)."""

    index: int
    type: str
    cores: float
    memory_gb: float
    speed: float
    bandwidth_gbps: float
    free_cores: float
    free_memory_gb: float
    running: list[TaskKey]
    queue: list[TaskKey]


@dataclass(slots=True)
class WorkflowView:
    """The state at a decision. Reply ``WAIT`` or ``view.action(c, v)``: candidate ``c`` on VM ``v``."""

    time: float
    vms: list[VmView]
    workflows: dict[int, WorkflowInfo]
    candidates: list[TaskView]
    spread: float
    rate: tuple[tuple[float, ...], ...]
    startup: tuple[tuple[float, ...], ...]

    @property
    def n_vms(self) -> int:
        return len(self.vms)

    def action(self, candidate: int, vm: int) -> int:
        """The action that puts ``candidates[candidate]`` on VM ``vm``."""
        return candidate * len(self.vms) + vm

    def task(self, key: TaskKey) -> TaskView:
        return self.workflows[key[0]].tasks[key[1]]

    def comm(self, data: float, p: int, q: int) -> float:
        """Seconds to move ``data`` GB from VM ``p`` to VM ``q`` (0 on the same VM)."""
        return 0.0 if p == q else self.startup[p][q] + data / self.rate[p][q]

    def can_run(self, task: TaskView, vm: int) -> bool:
        """Whether ``task`` may be placed on ``vm`` (a mean duration there, and its demand within the capacity)."""
        v = self.vms[vm]
        return task.means[vm] is not None and task.cores <= v.cores and task.memory_gb <= v.memory_gb


@dataclass(frozen=True)
class _Static:
    """A workflow's part that never changes, by column (one tuple per ``TaskView`` field, in its order): workflow
    id, index, cores, memory, priority, parents, children, means. Columns, so that a view's tasks are one
    ``map(TaskView, ...)`` (the view is rebuilt at every decision: this is the replica's hot loop)."""

    family: str
    arrival: float
    columns: tuple[tuple[Any, ...], ...]


class _State:
    """A workflow's changing part by column (status name, vm, placed, start, finish, ready), and its done tasks."""

    __slots__ = ("columns", "done")

    def __init__(self, n: int) -> None:
        self.columns: list[list[Any]] = [[STATUS_NAMES[0]] * n] + [[None] * n for _ in range(5)]
        self.done = 0


class ViewKeeper:
    """The replica's truth: what the payloads said, and a fresh ``WorkflowView`` of it per decision."""

    def __init__(self, start: dict[str, Any]) -> None:
        cluster = start["cluster"]
        self.cluster = cluster
        self.spread = float(start["spread"])
        self.rate = tuple(tuple(float(x) for x in row) for row in cluster["rate"])
        self.startup = tuple(tuple(float(x) for x in row) for row in cluster["startup"])
        self.static: dict[int, _Static] = {}
        self.state: dict[int, _State] = {}
        self.time = 0.0
        self.vms: list[Any] = []
        self.candidates: list[TaskKey] = []

    def apply(self, payload: dict[str, Any]) -> None:
        """Bring the truth up to date with one decision's payload (``sandbox.payload``'s format)."""
        self.time = float(payload["t"])
        touched = set()
        for wf_id, family, arrival, tasks in payload["new"]:
            n = len(tasks)
            children: list[list[tuple[int, float]]] = [[] for _ in tasks]
            for i, task in enumerate(tasks):
                for p, data in task[3]:
                    children[p].append((i, float(data)))
            self.static[wf_id] = _Static(
                family,
                float(arrival),
                (
                    (wf_id,) * n,
                    tuple(range(n)),
                    tuple(int(t[0]) for t in tasks),
                    tuple(float(t[1]) for t in tasks),
                    tuple(int(t[2]) for t in tasks),
                    tuple(tuple((int(p), float(d)) for p, d in t[3]) for t in tasks),
                    tuple(tuple(c) for c in children),
                    tuple(tuple(None if x is None else float(x) for x in t[4]) for t in tasks),
                ),
            )
            self.state[wf_id] = _State(n)
            touched.add(wf_id)
        done = STATUS_NAMES[3]
        for wf_id, index, status, *rest in payload["upd"]:
            state = self.state[wf_id]
            columns = state.columns
            name = STATUS_NAMES[status]
            state.done += (name == done) - (columns[0][index] == done)
            columns[0][index] = name
            for column, value in zip(columns[1:], rest, strict=True):
                column[index] = value
            touched.add(wf_id)
        # A workflow leaves the view once all of its tasks are done (only one the payload touched can have become so).
        for wf_id in sorted(touched):
            state = self.state[wf_id]
            if state.done == len(state.columns[0]):
                del self.state[wf_id], self.static[wf_id]
        self.vms = payload["vms"]
        self.candidates = [(int(w), int(i)) for w, i in payload["cand"]]

    def view(self) -> WorkflowView:
        """A new view of the truth (nothing in it is shared with the keeper but immutable tuples)."""
        workflows = {}
        for wf_id, static in self.static.items():
            tasks = list(map(TaskView, *static.columns, *self.state[wf_id].columns))
            workflows[wf_id] = WorkflowInfo(wf_id, static.family, static.arrival, tasks)
        cluster = self.cluster
        vms = [
            VmView(
                v,
                cluster["types"][v],
                cluster["cores"][v],
                cluster["memory"][v],
                cluster["speed"][v],
                cluster["bandwidth_gbps"][v],
                free_c,
                free_m,
                [(w, i) for w, i in running],
                [(w, i) for w, i in queue],
            )
            for v, (free_c, free_m, running, queue) in enumerate(self.vms)
        ]
        candidates = [workflows[w].tasks[i] for w, i in self.candidates]
        return WorkflowView(self.time, vms, workflows, candidates, self.spread, self.rate, self.startup)
