"""The baselines of ``workflows-v1``: FCFS, HEFT (online), Min-Min and Random, each ``policy(view, candidates, rng)``.

* **FCFS** (the seed's start-now dispatch): the ready candidate (all parents finished) that became ready first
  (ties: earlier workflow, lower index) goes to the lowest-index VM that can start it now (an empty queue, and its
  cores and memory free); if no ready candidate can start anywhere, wait.
* **Min-Min** (start-now): over ready candidates and the VMs that can start them now, the pair of least expected
  completion (now + its inputs' transfer + its mean there); ties: earlier candidate, lower VM.
* **HEFT** (online): plans every known unplaced task as the paper does (``heft.py``: upward ranks from mean costs
  over the VMs and mean communication over VM pairs, exact; insertion-based earliest finish on each VM's timeline of
  cores and memory), over what is known now: running tasks expected to end at ``start + mean`` (or now, if later
  than that), queued ones where their queue lets them start, data leaving at the later of its task's finish and now.
  A new task joins a VM's queue, so it cannot start before the last queued one there. It places the planned task of
  earliest start (ties: rank order) on its planned VM, one per decision, and waits once everything is placed. On a
  static DAG it carries out the paper's schedule. (The plan is kept from one decision to the next while nothing
  but its own placement changed: a cost, not a rule.)
* **Random**: uniform over the allowed actions (wait included when allowed).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from layersched.sim.tracks.workflows_v1.heft import Timeline, paper_ranks
from layersched.sim.tracks.workflows_v1.view import WAIT, TaskKey, TaskView, WorkflowView

Policy = Callable[[WorkflowView, list[TaskView], random.Random], int]


def can_wait(view: WorkflowView) -> bool:
    """Waiting is allowed while some task runs or is queued (otherwise nothing would ever happen)."""
    return any(vm.running or vm.queue for vm in view.vms)


def _starts_now(view: WorkflowView, task: TaskView, v: int) -> bool:
    vm = view.vms[v]
    return (
        not vm.queue and view.can_run(task, v) and task.cores <= vm.free_cores and task.memory_gb <= vm.free_memory_gb
    )


def _ready(view: WorkflowView) -> list[tuple[int, TaskView]]:
    return [(c, t) for c, t in enumerate(view.candidates) if t.ready is not None]


def fcfs(view: WorkflowView, candidates: list[TaskView], rng: random.Random) -> int:
    for c, task in sorted(_ready(view), key=lambda ct: (ct[1].ready, ct[1].workflow, ct[1].index)):
        for v in range(view.n_vms):
            if _starts_now(view, task, v):
                return view.action(c, v)
    return WAIT


def _input_delay(view: WorkflowView, task: TaskView, v: int) -> float:
    tasks = view.workflows[task.workflow].tasks
    delay = 0.0
    for p, data in task.parents:
        vp = tasks[p].vm
        assert vp is not None
        delay = max(delay, view.comm(data, vp, v))
    return delay


def min_min(view: WorkflowView, candidates: list[TaskView], rng: random.Random) -> int:
    best: tuple[float, int] | None = None
    for c, task in _ready(view):
        for v in range(view.n_vms):
            if _starts_now(view, task, v):
                mean = task.means[v]
                assert mean is not None
                completion = view.time + _input_delay(view, task, v) + mean
                if best is None or completion < best[0]:
                    best = (completion, view.action(c, v))
    return WAIT if best is None else best[1]


def random_policy(view: WorkflowView, candidates: list[TaskView], rng: random.Random) -> int:
    actions = [
        view.action(c, v) for c, t in enumerate(view.candidates) for v in range(view.n_vms) if view.can_run(t, v)
    ]
    if can_wait(view):
        actions.append(WAIT)
    return rng.choice(actions)


def workflow_ranks(view: WorkflowView, wf_id: int) -> list[Fraction]:
    """HEFT's upward ranks of a workflow's tasks, as ``heft.exact_ranks`` computes them for a static DAG."""
    tasks = view.workflows[wf_id].tasks
    return paper_ranks([t.means for t in tasks], [t.children for t in tasks], view.rate, view.startup)


class Heft:
    """The online HEFT baseline (a callable policy; one per episode stream, since it keeps its last plan)."""

    def __init__(self) -> None:
        self._plan: list[tuple[TaskKey, int]] = []
        self._expect: Any = None

    def __call__(self, view: WorkflowView, candidates: list[TaskView], rng: random.Random) -> int:
        if self._plan and self._signature(view) == self._expect:
            key, vm = self._plan.pop(0)
        else:
            self._plan = self.plan(view)
            key, vm = self._plan.pop(0)
        index = {t.key: c for c, t in enumerate(view.candidates)}
        c = index.get(key)
        if c is None:  # unreachable by the argument in env.py; replan rather than break the contract
            self._plan = self.plan(view)
            key, vm = self._plan.pop(0)
            c = index[key]
        self._expect = self._signature(view, extra=key)
        return view.action(c, vm)

    @staticmethod
    def _signature(view: WorkflowView, extra: TaskKey | None = None) -> Any:
        placed = set()
        done = 0
        for wf in view.workflows.values():  # one pass: this runs twice per decision
            for t in wf.tasks:
                status = t.status
                if status != "waiting":
                    placed.add((t.workflow, t.index))
                    done += status == "done"
        if extra is not None:
            placed.add(extra)
        return (view.time, tuple(view.workflows), frozenset(placed), done)

    def plan(self, view: WorkflowView) -> list[tuple[TaskKey, int]]:
        """Every unplaced task as ``(key, vm)`` in planned start order (ties: rank order)."""
        now = view.time
        lines: list[Timeline[float]] = [Timeline(vm.cores, vm.memory_gb) for vm in view.vms]
        floor = [now] * view.n_vms
        finish: dict[TaskKey, float] = {}
        where: dict[TaskKey, int] = {}
        for wf in view.workflows.values():
            for t in wf.tasks:
                if t.status == "done":
                    assert t.finish is not None and t.vm is not None
                    finish[t.key], where[t.key] = t.finish, t.vm
                elif t.status == "running":
                    assert t.start is not None and t.vm is not None
                    mean = t.means[t.vm]
                    assert mean is not None
                    end = max(t.start + mean, now)
                    lines[t.vm].book(t.start, end, t.cores, t.memory_gb)
                    finish[t.key], where[t.key] = end, t.vm
        heads = [list(vm.queue) for vm in view.vms]
        while any(heads):
            for v, queue in enumerate(heads):
                if queue and all((queue[0][0], p) in finish for p, _ in view.task(queue[0]).parents):
                    t = view.task(queue.pop(0))
                    placed = t.placed if t.placed is not None else now
                    start = self._book(view, lines, floor, finish, where, t, v, placed)
                    floor[v] = start
                    break
            else:  # pragma: no cover - the queues cannot deadlock (env.py)
                raise AssertionError("queued tasks wait for each other")
        pending: list[tuple[Fraction, int, int, TaskView]] = []
        for wf in view.workflows.values():
            if any(t.status == "waiting" for t in wf.tasks):
                ranks = workflow_ranks(view, wf.id)
                for t in wf.tasks:
                    if t.status == "waiting":
                        pending.append((-ranks[t.index], wf.id, t.index, t))
        pending.sort(key=lambda x: x[:3])
        planned: list[tuple[float, int, TaskKey, int]] = []
        for position, (_, _, _, t) in enumerate(pending):
            best: tuple[float, float, int] | None = None
            for v in range(view.n_vms):
                if not view.can_run(t, v):
                    continue
                mean = t.means[v]
                assert mean is not None
                ready = max(floor[v], self._data_ready(view, finish, where, t, v, now))
                start = lines[v].earliest_start(ready, mean, t.cores, t.memory_gb)
                if best is None or start + mean < best[1]:
                    best = (start, start + mean, v)
            assert best is not None
            start, end, v = best
            lines[v].book(start, end, t.cores, t.memory_gb)
            finish[t.key], where[t.key] = end, v
            planned.append((start, position, t.key, v))
        planned.sort()
        return [(key, v) for _, _, key, v in planned]

    @staticmethod
    def _data_ready(
        view: WorkflowView, finish: dict[TaskKey, float], where: dict[TaskKey, int], t: TaskView, v: int, now: float
    ) -> float:
        ready = now
        for p, data in t.parents:
            key = (t.workflow, p)
            ready = max(ready, max(finish[key], now) + view.comm(data, where[key], v))
        return ready

    def _book(
        self,
        view: WorkflowView,
        lines: list[Timeline[float]],
        floor: list[float],
        finish: dict[TaskKey, float],
        where: dict[TaskKey, int],
        t: TaskView,
        v: int,
        placed: float,
    ) -> float:
        mean = t.means[v]
        assert mean is not None
        ready = floor[v]
        for p, data in t.parents:
            key = (t.workflow, p)
            ready = max(ready, max(finish[key], placed) + view.comm(data, where[key], v))
        start = lines[v].earliest_start(ready, mean, t.cores, t.memory_gb)
        lines[v].book(start, start + mean, t.cores, t.memory_gb)
        finish[t.key], where[t.key] = start + mean, v
        return start


BASELINES: dict[str, Callable[[], Policy]] = {
    "FCFS": lambda: fcfs,
    "HEFT": Heft,
    "MinMin": lambda: min_min,
    "Random": lambda: random_policy,
}
