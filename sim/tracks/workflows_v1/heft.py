"""HEFT (Topcuoglu, Hariri and Wu, IEEE TPDS 13(3), 2002) as a planner over a static DAG.

1. The upward rank of task i is ``rank_u(i) = w̄_i + max over children j of (c̄_ij + rank_u(j))``: ``w̄_i`` is the
   mean of i's costs over the processors that can run it (the paper's mean, skipping ``null``), and
   ``c̄_ij = L̄ + data_ij / B̄`` with ``L̄`` and ``B̄`` the mean startup latency and bandwidth over ordered pairs of
   distinct processors (0 with a single processor: nothing is ever sent).
2. Tasks are scheduled in decreasing rank; equal ranks go to the lower task index. (A task whose parent is not yet
   scheduled waits for it: this only matters for ranks that tie through zero costs, where the paper's order would
   not be topological.)
3. Each goes to the processor of its earliest finish time, with insertion: the earliest idle slot long enough, at or
   after the time its inputs arrive, even between two tasks already booked. Equal finish times go to the lower
   processor index.

Ties are real ties: the arithmetic is exact (``fractions.Fraction`` of the given floats), so the paper's T2 ranks
exactly 80 where floats make it 79.99999999999999. ``Timeline`` is the insertion rule for a processor of any
capacity (cores and memory), which the online baseline reuses on multi-core VMs; the paper's processor is
capacity 1 with tasks of demand 1.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Generic, TypeVar

from layersched.sim.tracks.workflows_v1.dag import StaticDag

# Times are floats (the online baseline) or Fractions (the exact planner): the same rules in either.
T = TypeVar("T", float, Fraction)


class Timeline(Generic[T]):
    """The intervals booked on one processor of ``cores`` x ``memory`` capacity, for insertion-based EST."""

    def __init__(self, cores: float = 1, memory: float = 1) -> None:
        self.cores = cores
        self.memory = memory
        self.booked: list[tuple[T, T, float, float]] = []

    def book(self, start: T, finish: T, cores: float = 1, memory: float = 1) -> None:
        self.booked.append((start, finish, cores, memory))

    def earliest_start(self, ready: T, duration: T, cores: float = 1, memory: float = 1) -> T:
        """The earliest ``t >= ready`` such that the task fits beside everything booked over ``[t, t + duration)``.

        Only ``ready`` and the finish times after it can be that time: usage only drops at a finish."""
        candidates: set[T] = {f for _, f, _, _ in self.booked if f > ready}
        candidates.add(ready)
        for t in sorted(candidates):
            if self._fits(t, t + duration, cores, memory):
                return t
        raise AssertionError("unreachable: after the last finish the processor is empty")  # pragma: no cover

    def _fits(self, lo: T, hi: T, cores: float, memory: float) -> bool:
        # The load over [lo, hi) is highest at lo or at a booked start inside it.
        points: list[T] = [s for s, _, _, _ in self.booked if lo < s < hi]
        points.append(lo)
        for x in points:
            used_c = used_m = 0.0
            for s, f, c, m in self.booked:
                if s <= x < f:
                    used_c += c
                    used_m += m
            if used_c + cores > self.cores or used_m + memory > self.memory:
                return False
        return True


def upward_ranks(
    children: Sequence[Sequence[tuple[int, float]]],
    mean_cost: Sequence[T],
    mean_comm: Callable[[float], T],
    order: Sequence[int],
) -> list[T]:
    """``rank_u`` of every task, given each task's children ``(j, data)``, its mean cost, the mean communication
    cost of ``data`` and a topological ``order``."""
    rank: list[T] = list(mean_cost)
    for i in reversed(order):
        best = max((mean_comm(data) + rank[j] for j, data in children[i]), default=None)
        if best is not None:
            rank[i] = mean_cost[i] + best
    return rank


def rank_order(ranks: Sequence[T], parents: Sequence[Sequence[tuple[int, float]]]) -> list[int]:
    """Decreasing rank, lower index first on a tie, never a task before its parents."""
    waiting = [len(p) for p in parents]
    children: list[list[int]] = [[] for _ in ranks]
    for v, ps in enumerate(parents):
        for u, _ in ps:
            children[u].append(v)
    free = [(-ranks[i], i) for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(free)
    order: list[int] = []
    while free:
        _, u = heapq.heappop(free)
        order.append(u)
        for v in children[u]:
            waiting[v] -= 1
            if waiting[v] == 0:
                heapq.heappush(free, (-ranks[v], v))
    return order


@dataclass(frozen=True)
class Slot:
    """Task ``task`` (an index) runs on processor ``proc`` over ``[start, finish)``."""

    task: int
    proc: int
    start: float
    finish: float


@dataclass(frozen=True)
class HeftPlan:
    """HEFT's upward ranks (by task index), its slots in the order it scheduled them, and the makespan."""

    ranks: tuple[float, ...]
    slots: tuple[Slot, ...]
    makespan: float

    def by_start(self) -> list[Slot]:
        """The slots by start time (ties: the order HEFT scheduled them), the order to carry the plan out in."""
        return sorted(self.slots, key=lambda s: s.start)


def paper_ranks(
    costs: Sequence[Sequence[float | None]],
    children: Sequence[Sequence[tuple[int, float]]],
    bandwidth: Sequence[Sequence[float]],
    startup: Sequence[Sequence[float]],
) -> list[Fraction]:
    """The upward ranks, exact, from each task's costs per processor (None: cannot run there), its children
    ``(j, data)`` and the per-pair bandwidth and startup matrices (the diagonals are not read)."""
    p = len(bandwidth)
    pairs = [(q, r) for q in range(p) for r in range(p) if q != r]
    mean_cost = []
    for row in costs:
        allowed = [Fraction(c) for c in row if c is not None]
        mean_cost.append(sum(allowed, Fraction(0)) / len(allowed))
    mean_bw = sum((Fraction(bandwidth[q][r]) for q, r in pairs), Fraction(0)) / max(1, len(pairs))
    mean_startup = sum((Fraction(startup[q][r]) for q, r in pairs), Fraction(0)) / max(1, len(pairs))

    def mean_comm(data: float) -> Fraction:
        return mean_startup + Fraction(data) / mean_bw if pairs else Fraction(0)

    parents: list[list[tuple[int, float]]] = [[] for _ in costs]
    for u, kids in enumerate(children):
        for v, data in kids:
            parents[v].append((u, data))
    order = rank_order([Fraction(0)] * len(costs), parents)  # any topological order will do
    return upward_ranks(children, mean_cost, mean_comm, order)


def exact_ranks(dag: StaticDag) -> list[Fraction]:
    """The upward ranks of ``dag`` as exact fractions."""
    return paper_ranks(dag.costs, dag.children(), dag.bandwidth, dag.startup)


def heft(dag: StaticDag) -> HeftPlan:
    """HEFT's schedule of ``dag`` (the rules of this module's docstring)."""
    ranks = exact_ranks(dag)
    parents = dag.parents()
    timelines: list[Timeline[Fraction]] = [Timeline() for _ in range(dag.n_procs)]
    placed: dict[int, tuple[int, Fraction]] = {}  # task -> (processor, finish)
    slots: list[Slot] = []
    for i in rank_order(ranks, parents):
        best: tuple[Fraction, int, Fraction] | None = None
        for p, cost in enumerate(dag.costs[i]):
            if cost is None:
                continue
            w = Fraction(cost)
            ready = max(
                (placed[m][1] + _exact_comm(dag, data, placed[m][0], p) for m, data in parents[i]), default=Fraction(0)
            )
            start = timelines[p].earliest_start(ready, w)
            if best is None or start + w < best[0] + best[2]:
                best = (start, p, w)
        assert best is not None  # StaticDag.build: every task can run somewhere
        start, p, w = best
        timelines[p].book(start, start + w)
        placed[i] = (p, start + w)
        slots.append(Slot(i, p, float(start), float(start + w)))
    makespan = max(f for _, f in placed.values())
    return HeftPlan(tuple(float(r) for r in ranks), tuple(slots), float(makespan))


def _exact_comm(dag: StaticDag, data: float, p: int, q: int) -> Fraction:
    if p == q:
        return Fraction(0)
    return Fraction(dag.startup[p][q]) + Fraction(data) / Fraction(dag.bandwidth[p][q])
