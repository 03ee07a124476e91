"""The authoritative simulator of one ``workflows-v1`` episode: events, placements, VM queues, metrics.

Rules (docs/tracks/workflows-v1.md says the same for students):

* **Time and events.** Workflows arrive (``ARRIVE``), tasks finish (``FINISH``); a queued task's input data arriving
  only wakes its VM (``WAKE``) and is not a decision point. Events at the same time are handled together, in the
  order they were scheduled.
* **Decisions.** After the events of a time that include an arrival or a finish, and after each placement, the
  policy is asked if there is a candidate. A *candidate* is a task of an arrived workflow that is not yet placed and
  whose parents all are (placed, not necessarily finished). The reply is ``WAIT`` (-1: nothing more now, go to the
  next arrival or finish) or ``c * n_vms + v``: put candidate ``c`` (of the view's ``candidates``) on VM ``v``.
  Waiting is refused while no task runs or is queued (the policy must place something: with nothing running,
  nothing may be left to happen, and the view does not say whether more workflows will come).
* **Placement.** A VM may take a task if the task may run there (a mean duration exists, i.e. its ``W`` is not null)
  and the task's cores and memory fit the VM's capacity. The task joins the VM's queue. A VM starts tasks in queue
  order (first placed, first started: no overtaking); the head starts as soon as all its input data are on the VM
  and its cores and memory fit beside what runs there. So a policy that places a ready task on a VM with room
  starts it now (the seed's dispatch), and a list scheduler can queue a whole plan.
* **Data.** A task's output to a child leaves its VM when both it has finished and the child is placed, and arrives
  ``startup[p][q] + data / rate[p][q]`` later (nothing on the same VM; no contention between transfers).
* **Durations.** A task's actual duration on VM v is its mean there times its factor (``scenario.py``), drawn with
  the workflow and revealed only when it finishes.

Placements only follow parents, and queues run in placement order, so no queue can deadlock: the earliest-placed
task that has not started always has its parents started and nothing before it in its queue.
"""

from __future__ import annotations

import dataclasses
import heapq
import random
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from layersched.sim.errors import PolicyError
from layersched.sim.tracks.workflows_v1.families import TaskSpec, draw_workflow
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario
from layersched.sim.tracks.workflows_v1.view import WAIT
from layersched.sim.tracks.workflows_v1.vms import VM_TYPES, transfer_rate

ARRIVE, FINISH, WAKE = 0, 1, 2
# Task status codes: indices of the view's STATUS_NAMES.
WAITING, QUEUED, RUNNING, DONE = 0, 1, 2, 3
# The seed's resource weights (cpu 0.3, memory 0.5, bandwidth 0.2), CPU and memory only, renormalised to sum 1.
CPU_WEIGHT, MEM_WEIGHT = 0.3 / 0.8, 0.5 / 0.8
SLA_FACTOR = 2.0


@dataclass(frozen=True)
class Workflow:
    """One drawn workflow: its tasks, each task's mean duration per VM (None: cannot run there), its factors."""

    id: int
    family: str
    arrival: float
    tasks: tuple[TaskSpec, ...]
    means: tuple[tuple[float | None, ...], ...]
    factors: tuple[float, ...]


@dataclass(frozen=True)
class Cluster:
    """The VMs of an episode: type names, capacities, speeds, bandwidths; ``rate``/``startup`` per ordered pair."""

    types: tuple[str, ...]
    cores: tuple[float, ...]
    memory: tuple[float, ...]
    speed: tuple[float, ...]
    bandwidth_gbps: tuple[float, ...]
    rate: tuple[tuple[float, ...], ...]
    startup: tuple[tuple[float, ...], ...]

    def comm(self, data: float, p: int, q: int) -> float:
        return 0.0 if p == q else self.startup[p][q] + data / self.rate[p][q]

    def to_json(self) -> dict[str, Any]:
        return {
            f.name: [list(r) if isinstance(r, tuple) else r for r in getattr(self, f.name)]
            for f in dataclasses.fields(self)
        }


def build_cluster(scenario: WorkflowScenario) -> Cluster:
    if scenario.dag is not None:
        dag = scenario.dag
        p = dag.n_procs
        return Cluster(("processor",) * p, (1.0,) * p, (1.0,) * p, (1.0,) * p, (0.0,) * p, dag.bandwidth, dag.startup)
    types = [t for t, count in zip(VM_TYPES, scenario.vm_counts, strict=True) for _ in range(count)]
    # The diagonal is never read (nothing moves within a VM).
    rate = tuple(tuple(transfer_rate(a, b) for b in types) for a in types)
    return Cluster(
        tuple(t.name for t in types),
        tuple(float(t.cores) for t in types),
        tuple(t.memory_gb for t in types),
        tuple(t.speed for t in types),
        tuple(t.bandwidth_gbps for t in types),
        rate,
        tuple((0.0,) * len(types) for _ in types),
    )


class WorkflowDraw:
    """An episode's workflows from ``workload``, drawn one at a time in arrival order (256 bits of ``workload`` seed
    a numpy generator, taken at once). ``next_arrival`` draws only the next workflow's arrival time, ``next_workflow``
    the rest of it: the episode calls the latter when the workflow arrives, so nothing of a workflow but its arrival
    time is drawn or built before then (the work before a decision depends on the arrived workflows only). One
    stream, in the order ``draw_workflows`` always drew it: arrival, family, tasks, factors, then the next one's."""

    def __init__(self, scenario: WorkflowScenario, cluster: Cluster, workload: random.Random) -> None:
        self.scenario = scenario
        self.speed = cluster.speed
        self.count = 1 if scenario.dag is not None else scenario.n_workflows
        self.next_id = 0
        self.time = 0.0
        # 256 bits: a keyed episode keeps as much of its key (>= 128 bits) as the numpy generator can take in.
        self.rng = None if scenario.dag is not None else np.random.Generator(np.random.PCG64(workload.getrandbits(256)))

    def next_arrival(self) -> float | None:
        """The arrival time of the next workflow (None: there is none)."""
        if self.next_id == self.count:
            return None
        if self.rng is not None and self.scenario.arrival_rate > 0:
            self.time += float(self.rng.exponential(1.0 / self.scenario.arrival_rate))
        return self.time

    def next_workflow(self) -> Workflow:
        """The workflow whose arrival ``next_arrival`` gave last."""
        w, scenario = self.next_id, self.scenario
        self.next_id += 1
        if self.rng is None:
            assert scenario.dag is not None
            dag = scenario.dag
            parents = dag.parents()
            tasks = tuple(TaskSpec(0.0, 1, 1.0, 1, tuple(parents[i])) for i in range(dag.n_tasks))
            return Workflow(0, "static", 0.0, tasks, dag.costs, (1.0,) * dag.n_tasks)
        rng = self.rng
        family = scenario.families[int(rng.integers(len(scenario.families)))]
        tasks = tuple(draw_workflow(family, rng))
        z = rng.standard_normal(len(tasks))
        factors = (
            (1.0,) * len(tasks)
            if scenario.deterministic
            else tuple(max(0.1, 1.0 + scenario.spread * float(x)) for x in z)
        )
        speed = self.speed
        means = tuple(tuple(task.work / s for s in speed) for task in tasks)
        return Workflow(w, family, self.time, tasks, means, factors)


def draw_workflows(scenario: WorkflowScenario, cluster: Cluster, workload: random.Random) -> list[Workflow]:
    """Every workflow of an episode, in arrival order, from ``workload`` (``WorkflowDraw`` all at once)."""
    draw = WorkflowDraw(scenario, cluster, workload)
    out = []
    while draw.next_arrival() is not None:
        out.append(draw.next_workflow())
    return out


@dataclass(frozen=True)
class WorkflowMetrics:
    """An episode's figures (times in s, utilisations and the SLA rate as fractions)."""

    mean_completion: float
    p95_completion: float
    makespan: float
    cpu_utilisation: float
    memory_utilisation: float
    weighted_utilisation: float
    sla_violation_rate: float


class WorkflowEpisode:
    """One episode, driven a decision at a time (the ``TrustedEpisode`` of the track)."""

    def __init__(self, scenario: WorkflowScenario, workload: random.Random) -> None:
        self.scenario = scenario
        self.cluster = build_cluster(scenario)
        self._workload: random.Random | None = workload
        self.workflows: list[Workflow] = []
        self.drawn = False

    # ------------------------------------------------------------------ setting up

    def draw(self) -> None:
        """Start the workload (once; ``first_decision`` does it if nobody did): take its seed and schedule the first
        arrival. Each workflow is drawn and its tasks indexed when it arrives (``_arrive``), never before."""
        if self.drawn:
            return
        self.drawn = True
        assert self._workload is not None
        self.source = WorkflowDraw(self.scenario, self.cluster, self._workload)
        # A keyed source is never copied along with the episode (run_policies copies the numpy generator seeded
        # from it, as it copied the drawn workflows before the draw was lazy).
        self._workload = None
        n_vms = len(self.cluster.cores)
        self.offset = [0]
        # Per task (global index g = offset[workflow] + index), appended when its workflow arrives.
        self.key: list[tuple[int, int]] = []
        self.spec: list[TaskSpec] = []
        self.means: list[tuple[float | None, ...]] = []
        self.factor: list[float] = []
        self.parents: list[list[tuple[int, float]]] = []
        self.children: list[list[tuple[int, float]]] = []
        self.status: list[int] = []
        self.vm: list[int | None] = []
        self.placed: list[float | None] = []
        self.start: list[float | None] = []
        self.finish: list[float | None] = []
        self.ready: list[float | None] = []
        self.inputs_at: list[float | None] = []
        self.unfinished: list[int] = []
        self.unplaced_parents: list[int] = []
        self.placeable: set[int] = set()
        self.free_cores = list(self.cluster.cores)
        self.free_memory = list(self.cluster.memory)
        self.queue: list[deque[int]] = [deque() for _ in range(n_vms)]
        self.running: list[list[int]] = [[] for _ in range(n_vms)]
        self.wake_at: list[float | None] = [None] * n_vms
        self.left: list[int] = []  # per arrived workflow: its tasks not finished
        self.done_at: list[float | None] = []
        self.arrived = 0
        self.now = 0.0
        self.events: list[tuple[float, int, int, int]] = []
        self.seq = 0
        self.busy_core_s = 0.0
        self.busy_memory_s = 0.0
        self.candidates: list[int] = []
        self.dirty: set[int] = set()  # tasks whose state changed since the last payload
        self._push_arrival()

    def _push_arrival(self) -> None:
        """Schedule the next workflow's arrival, if any. Its sequence number is below every other event's and rises
        with the workflow: the order of events at a time is the one of pushing every arrival first (as before the
        draw was lazy), so arrivals at a time come before its finishes and wakes, in workflow order."""
        at = self.source.next_arrival()
        if at is not None:
            w = self.source.next_id
            heapq.heappush(self.events, (at, w - self.source.count, ARRIVE, w))

    def _push(self, time: float, kind: int, x: int) -> None:
        heapq.heappush(self.events, (time, self.seq, kind, x))
        self.seq += 1

    # ------------------------------------------------------------------ the rules

    def _arrive(self, w: int) -> None:
        wf = self.source.next_workflow()
        assert wf.id == w
        self.workflows.append(wf)
        self.arrived += 1
        base = self.offset[-1]
        n = len(wf.tasks)
        self.offset.append(base + n)
        self.key.extend((w, i) for i in range(n))
        self.spec.extend(wf.tasks)
        self.means.extend(wf.means)
        self.factor.extend(wf.factors)
        parents = [[(base + p, d) for p, d in t.parents] for t in wf.tasks]
        self.parents.extend(parents)
        self.children.extend([] for _ in range(n))
        for i, ps in enumerate(parents):
            for p, d in ps:
                self.children[p].append((base + i, d))
        self.status.extend([WAITING] * n)
        self.vm.extend([None] * n)
        self.placed.extend([None] * n)
        self.start.extend([None] * n)
        self.finish.extend([None] * n)
        self.ready.extend([None] * n)
        self.inputs_at.extend([None] * n)
        self.unfinished.extend(len(ps) for ps in parents)
        self.unplaced_parents.extend(len(ps) for ps in parents)
        self.left.append(n)
        self.done_at.append(None)
        for i, ps in enumerate(parents):
            if not ps:
                g = base + i
                self.ready[g] = self.now
                self.dirty.add(g)
                self.placeable.add(g)
        self._push_arrival()

    def _finish(self, g: int) -> None:
        v = self.vm[g]
        assert v is not None
        self.status[g] = DONE
        self.finish[g] = self.now
        self.dirty.add(g)
        self.running[v].remove(g)
        spec = self.spec[g]
        self.free_cores[v] += spec.cores
        self.free_memory[v] += spec.memory_gb
        w = self.key[g][0]
        self.left[w] -= 1
        if self.left[w] == 0:
            self.done_at[w] = self.now
        for c, _ in self.children[g]:
            self.unfinished[c] -= 1
            if self.unfinished[c] == 0:
                self.ready[c] = self.now
                self.dirty.add(c)
                if self.status[c] == QUEUED:
                    self._inputs(c)

    def _inputs(self, g: int) -> None:
        """When the inputs of ``g`` (placed, its parents all finished) are on its VM."""
        v, placed = self.vm[g], self.placed[g]
        assert v is not None and placed is not None
        at = placed
        for p, data in self.parents[g]:
            vp, fp = self.vm[p], self.finish[p]
            assert vp is not None and fp is not None
            at = max(at, max(fp, placed) + self.cluster.comm(data, vp, v))
        self.inputs_at[g] = at

    def place(self, g: int, v: int) -> None:
        self.status[g] = QUEUED
        self.vm[g] = v
        self.placed[g] = self.now
        self.dirty.add(g)
        self.placeable.discard(g)
        self.queue[v].append(g)
        for c, _ in self.children[g]:
            self.unplaced_parents[c] -= 1
            if self.unplaced_parents[c] == 0:
                self.placeable.add(c)
        if self.unfinished[g] == 0:
            self._inputs(g)
        self._try_start(v)

    def _try_start(self, v: int) -> None:
        queue = self.queue[v]
        while queue:
            g = queue[0]
            at = self.inputs_at[g]
            if at is None:
                return
            if at > self.now:
                if self.wake_at[v] != at:  # one pending wake per VM and time
                    self.wake_at[v] = at
                    self._push(at, WAKE, v)
                return
            spec = self.spec[g]
            if spec.cores > self.free_cores[v] or spec.memory_gb > self.free_memory[v]:
                return
            queue.popleft()
            self.free_cores[v] -= spec.cores
            self.free_memory[v] -= spec.memory_gb
            self.running[v].append(g)
            self.status[g] = RUNNING
            self.start[g] = self.now
            self.dirty.add(g)
            mean = self.means[g][v]
            assert mean is not None
            duration = mean * self.factor[g]
            self.busy_core_s += spec.cores * duration
            self.busy_memory_s += spec.memory_gb * duration
            self._push(self.now + duration, FINISH, g)

    def allowed(self, g: int, v: int) -> bool:
        spec = self.spec[g]
        return (
            self.means[g][v] is not None
            and spec.cores <= self.cluster.cores[v]
            and spec.memory_gb <= self.cluster.memory[v]
        )

    def _to_decision(self, placed: bool) -> bool:
        """Run events until a decision is due; False when the episode is over."""
        due = placed
        while True:
            if due and self.placeable:
                self.candidates = sorted(self.placeable)
                return True
            if not self.events:
                return False
            t = self.events[0][0]
            self.now = t
            due = False
            while self.events and self.events[0][0] == t:
                _, _, kind, x = heapq.heappop(self.events)
                if kind == ARRIVE:
                    self._arrive(x)
                    due = True
                elif kind == FINISH:
                    self._finish(x)
                    due = True
            for v in range(len(self.queue)):
                self._try_start(v)

    # ------------------------------------------------------------------ the decision loop

    def first(self) -> bool:
        """Start the episode: True if there is a first decision."""
        self.draw()
        return self._to_decision(False)

    def check(self, value: object, step: int) -> int:
        """``value`` as a valid action now, or ``PolicyError`` naming step and value."""
        n_vms = len(self.cluster.cores)
        if type(value) is not int:
            hint = " (return int(...))" if isinstance(value, (float, np.integer, np.floating)) else ""
            if isinstance(value, (tuple, list)) and len(value) == 2:
                hint = " (a (candidate, VM) pair is one int action: return view.action(c, v), c * view.n_vms + v)"
            raise PolicyError(
                f"step {step}: action {value!r:.80} ({type(value).__name__}) is not an int{hint}",
                step=step,
                value=value,
            )
        limit = len(self.candidates) * n_vms
        if value == WAIT:
            if not any(self.running[v] or self.queue[v] for v in range(n_vms)):
                raise PolicyError(
                    f"step {step}: wait (-1) while no task runs or is queued; "
                    f"place one of the {len(self.candidates)} candidates",
                    step=step,
                    value=value,
                )
            return value
        if not 0 <= value < limit:
            raise PolicyError(
                f"step {step}: action {value} is not -1 (wait) or one of 0..{limit - 1} "
                f"({len(self.candidates)} candidates x {n_vms} VMs)",
                step=step,
                value=value,
            )
        g, v = self.candidates[value // n_vms], value % n_vms
        if not self.allowed(g, v):
            spec = self.spec[g]
            raise PolicyError(
                f"step {step}: action {value} puts task {self.key[g]} (needs {spec.cores} cores, "
                f"{spec.memory_gb:g} GB) on VM {v}, which cannot run it",
                step=step,
                value=value,
            )
        return value

    def apply(self, action: int) -> bool:
        """Apply a checked action; True if a next decision exists."""
        if action == WAIT:
            return self._to_decision(False)
        n_vms = len(self.cluster.cores)
        self.place(self.candidates[action // n_vms], action % n_vms)
        return self._to_decision(True)

    def metrics(self) -> WorkflowMetrics:
        done = [d for d in self.done_at if d is not None]
        assert len(done) == len(self.workflows) == self.source.count, "metrics of an episode still running"
        completions = np.array([d - wf.arrival for wf, d in zip(self.workflows, done, strict=True)])
        first = min(wf.arrival for wf in self.workflows)
        last = max(f for f in self.finish if f is not None)
        span = last - first
        late = 0
        for g in range(len(self.spec)):
            allowed = [m for m in self.means[g] if m is not None]
            ready, finish = self.ready[g], self.finish[g]
            assert ready is not None and finish is not None
            late += finish > ready + SLA_FACTOR * sum(allowed) / len(allowed)
        cpu = self.busy_core_s / (sum(self.cluster.cores) * span) if span > 0 else 0.0
        mem = self.busy_memory_s / (sum(self.cluster.memory) * span) if span > 0 else 0.0
        return WorkflowMetrics(
            mean_completion=float(completions.mean()),
            p95_completion=float(np.percentile(completions, 95)),
            makespan=float(span),
            cpu_utilisation=float(cpu),
            memory_utilisation=float(mem),
            weighted_utilisation=float(CPU_WEIGHT * cpu + MEM_WEIGHT * mem),
            sla_violation_rate=late / len(self.spec),
        )
