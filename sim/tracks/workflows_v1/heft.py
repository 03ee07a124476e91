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

Ties are real ties: the arithmetic is exact (ranks in ``fractions.Fraction`` of the given floats, the schedule in
integer ticks of a common denominator), so the paper's T2 ranks exactly 80 where floats make it 79.99999999999999.
``Timeline`` is the insertion rule for a processor of any capacity (cores and memory), which the online baseline
reuses on multi-core VMs; the paper's processor is capacity 1 with tasks of demand 1.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Generic, TypeVar

from layersched.sim.tracks.workflows_v1.dag import StaticDag

# Times are floats (the online baseline) or exact integer ticks (the planner): the same rules in either.
T = TypeVar("T", int, float, Fraction)


class Timeline(Generic[T]):
    """The intervals booked on one processor of ``cores`` x ``memory`` capacity, for insertion-based EST."""

    def __init__(self, cores: float = 1, memory: float = 1) -> None:
        self.cores = cores
        self.memory = memory
        self.booked: list[tuple[T, T, float, float]] = []  # by start (then finish)

    def book(self, start: T, finish: T, cores: float = 1, memory: float = 1) -> None:
        bisect.insort(self.booked, (start, finish, cores, memory))

    def earliest_start(self, ready: T, duration: T, cores: float = 1, memory: float = 1) -> T:
        """The earliest ``t >= ready`` such that the task fits beside everything booked over ``[t, t + duration)``.

        Only ``ready`` and the finish times after it can be that time: usage only drops at a finish."""
        if cores >= self.cores and memory >= self.memory:
            return self._earliest_gap(ready, duration)  # the paper's case: one task at a time
        candidates: set[T] = {f for _, f, _, _ in self.booked if f > ready}
        candidates.add(ready)
        for t in sorted(candidates):
            if self._fits(t, t + duration, cores, memory):
                return t
        raise AssertionError("unreachable: after the last finish the processor is empty")  # pragma: no cover

    def _earliest_gap(self, ready: T, duration: T) -> T:
        # A task that needs the whole processor fits only where no booked interval overlaps it: scan the gaps in
        # start order (every interval before the current one ends by t, since t only grows past their finishes).
        t = ready
        for s, f, c, m in self.booked:
            if f <= t or s == f or (c <= 0 and m <= 0):
                continue
            if s >= t + duration and s > t:
                break
            t = max(t, f)
        return t

    def _fits(self, lo: T, hi: T, cores: float, memory: float) -> bool:
        # The load over [lo, hi) is highest at lo or at a booked start inside it; only overlapping intervals count.
        overlapping = [b for b in self.booked if (b[0] < hi and b[1] > lo) or b[0] == lo < b[1]]
        points: list[T] = [s for s, _, _, _ in overlapping if lo < s]
        points.append(lo)
        for x in points:
            used_c = used_m = 0.0
            for s, f, c, m in overlapping:
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


class _Ticks:
    """Every time of a static DAG's schedule as an integer number of ticks of ``1 / scale``.

    Costs, startups and data are floats, so exact rationals; ``scale`` is a common multiple of their denominators
    and of the bandwidths' numerators, so that each cost and each ``startup + data / bandwidth`` is a whole number
    of ticks. The schedule's sums and comparisons are then exact integer arithmetic, far cheaper than fractions.
    """

    def __init__(self, dag: StaticDag) -> None:
        p = dag.n_procs
        pairs = [(q, r) for q in range(p) for r in range(p) if q != r]
        bandwidth = {qr: Fraction(dag.bandwidth[qr[0]][qr[1]]) for qr in pairs}
        denominators = [Fraction(c).denominator for row in dag.costs for c in row if c is not None]
        denominators += [Fraction(dag.startup[q][r]).denominator for q, r in pairs]
        denominators += [Fraction(d).denominator for _, _, d in dag.edges]
        self.scale = math.lcm(*denominators, *(b.numerator for b in bandwidth.values()))
        self.costs = [[None if c is None else int(Fraction(c) * self.scale) for c in row] for row in dag.costs]
        self.startup = {qr: int(Fraction(dag.startup[qr[0]][qr[1]]) * self.scale) for qr in pairs}
        self.bandwidth = bandwidth

    def comm(self, data: float, q: int, r: int) -> int:
        if q == r:
            return 0
        b = self.bandwidth[(q, r)]
        scaled = Fraction(data) * self.scale  # a whole number (the scale has data's denominator)...
        return self.startup[(q, r)] + int(scaled * b.denominator) // b.numerator  # ...and the bandwidth's numerator

    def seconds(self, ticks: int) -> float:
        return float(Fraction(ticks, self.scale))


def heft(dag: StaticDag) -> HeftPlan:
    """HEFT's schedule of ``dag`` (the rules of this module's docstring)."""
    ranks = exact_ranks(dag)
    parents = dag.parents()
    ticks = _Ticks(dag)
    timelines: list[Timeline[int]] = [Timeline() for _ in range(dag.n_procs)]
    placed: dict[int, tuple[int, int]] = {}  # task -> (processor, finish)
    slots: list[Slot] = []
    for i in rank_order(ranks, parents):
        best: tuple[int, int, int] | None = None  # (finish, processor, start)
        for p, w in enumerate(ticks.costs[i]):
            if w is None:
                continue
            ready = max((placed[m][1] + ticks.comm(data, placed[m][0], p) for m, data in parents[i]), default=0)
            start = timelines[p].earliest_start(ready, w)
            if best is None or start + w < best[0]:
                best = (start + w, p, start)
        assert best is not None  # StaticDag.build: every task can run somewhere
        finish, p, start = best
        timelines[p].book(start, finish)
        placed[i] = (p, finish)
        slots.append(Slot(i, p, ticks.seconds(start), ticks.seconds(finish)))
    makespan = max(f for _, f in placed.values())
    return HeftPlan(tuple(float(r) for r in ranks), tuple(slots), ticks.seconds(makespan))
