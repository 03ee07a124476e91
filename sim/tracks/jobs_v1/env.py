"""The authoritative jobs-v1 environment: DeepRM's machine, job slots and backlog, one episode at a time.

Time is in steps. The machine's ``free[t, r]`` is the number of units of resource ``r`` free ``t`` steps from now,
for ``t`` in the horizon. A decision either places a visible job or is void:

* placing job ``j`` reserves its demand at the earliest offset ``o`` in ``0..time_horizon - len`` at which it fits for
  its whole length (the reference's range stops one short, at ``time_horizon - len - 1``: see docs/tracks/jobs-v1.md);
  it starts at ``time + o``, the slot is refilled from the backlog's head, and time does not move (several
  placements may happen within one step);
* void (explicit, an empty slot, or a job that fits at no offset) advances time by one step: the horizon shifts,
  jobs whose finish time has come leave the machine (all of them: the reference's removal while iterating may keep
  one a step longer), the step's arrival enters the first empty slot, else the backlog, else is dropped, and the
  step's reward is minus the sum of 1/len over every job in the system (on the machine, in a slot, in the backlog).

The job drawn for step 0 enters at time 0, before the first decision (the reference never introduces it: its jobs
enter only after its first time step). The episode ends when no arrival can come (``time >= simu_len - 1``) and
every job that arrived has finished. A void that would then wait for nothing (no arrival ahead, nothing on the
machine, a job waiting) is refused: every episode ends, whatever the policy does.
"""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from layersched.sim.tracks.jobs_v1.scenario import JobsScenario
from layersched.sim.tracks.jobs_v1.workload import Job

if TYPE_CHECKING:
    import numpy as np

_LENGTH = operator.attrgetter("length")


def _first_empty(slots: Sequence[Job | None]) -> int | None:
    """The first empty slot. (Not ``slots.index(None)``: ``in`` and ``index`` call the dataclass ``Job.__eq__`` on
    every held job, a Python call each, which was a quarter of a time step's cost.)"""
    for i, job in enumerate(slots):
        if job is None:
            return i
    return None


def earliest_offset(free: Sequence[Sequence[int]], length: int, demand: Sequence[int], horizon: int) -> int | None:
    """The first offset in ``0..horizon - length`` at which ``demand`` fits in ``free`` (its rows, one per step of
    the horizon) for ``length`` steps."""
    fits = (all(units >= need for units, need in zip(row, demand, strict=True)) for row in free[:horizon])
    return first_run(fits, length)


def first_run(fits: Iterable[bool], length: int) -> int | None:
    """Where the first ``length`` consecutive true values of ``fits`` (a job fits at each step) begin, if any: a job
    that fits at steps ``o..o + length - 1`` fits at offset ``o`` for its whole length."""
    run = 0
    for t, fit in enumerate(fits):
        run = run + 1 if fit else 0
        if run == length:
            return t - length + 1
    return None


class _Inverse(dict[int, float]):
    """``1.0 / n`` by ``n``, computed on first sight: the reward sums one per job in the system at every step."""

    def __missing__(self, n: int) -> float:
        value = self[n] = 1.0 / n
        return value


class JobsEnv:
    """One episode of ``scenario`` on the jobs ``jobs`` (in arrival order; a drawn workload has at most one per step,
    a test's may have several)."""

    def __init__(self, scenario: JobsScenario, jobs: Sequence[Job]) -> None:
        s = self.scenario = scenario
        self.jobs = tuple(jobs)
        self._arrivals: dict[int, list[Job]] = {}
        for job in self.jobs:
            self._arrivals.setdefault(job.arrival, []).append(job)
        # The machine's free units, one int per step of the horizon holding every resource's count in a field of
        # ``_bits + 1`` bits, its top bit a guard: a fit test on a step is one subtraction (see ``_offset``). Numpy on
        # rows of two units cost more in calls than the search itself (issue 19's benchmark, bench_jobs.py).
        self._bits = max([s.res_slot, *(need for job in self.jobs for need in job.demand)]).bit_length()
        self._shifts = [r * (self._bits + 1) for r in range(s.num_res)]
        self._guards = sum(1 << (shift + self._bits) for shift in self._shifts)
        self._idle_row = self._pack([s.res_slot] * s.num_res)
        self._rows = [self._idle_row] * s.time_horizon
        self._packed: dict[int, int] = {}  # job id -> its demand, packed as a row
        # The same units flat, step by step (the payload's layout), kept beside the packed rows by place and advance:
        # unpacking the rows for every decision's payload cost more than keeping both.
        self._idle_units = [s.res_slot] * s.num_res
        self._units = self._idle_units * s.time_horizon
        # job id -> its earliest offset on the present rows (asked by decision_open, the reply's check and place)
        self._offsets: dict[int, int | None] = {}
        # job id -> a step before which it cannot start: rows only lose units (place) or shift by one with an idle
        # row behind (advance), so where a job did not fit it still does not, and a search starts there.
        self._not_before: dict[int, int] = {}
        self._inverse = _Inverse()  # length -> 1.0 / length (the reward's terms)
        self.time = 0
        self.slots: list[Job | None] = [None] * s.num_nw
        self.backlog: deque[Job] = deque()
        self.running: list[Job] = []  # placed (running or reserved), not finished
        self.start: dict[int, int] = {}  # job id -> start step
        self.finish: dict[int, int] = {}
        self.entered: list[Job] = []  # arrivals that found a slot or backlog room, in arrival order
        self.dropped: list[Job] = []
        self.since_new_job = 0
        self.rewards: list[float] = []  # one per time step
        self._arrive()

    @property
    def free(self) -> np.ndarray:
        """``free[t, r]``: units of resource ``r`` free ``t`` steps from now (a new array: writing to it changes
        nothing)."""
        import numpy as np  # here: an episode and the track's table run without numpy (view.py's docstring)

        s = self.scenario
        return np.array(self.free_units(), dtype=np.int64).reshape(s.time_horizon, s.num_res)

    def free_units(self) -> list[int]:
        """``free`` flattened, step by step (the payload's layout)."""
        return self._units.copy()

    # -- what a decision may do --

    def placeable(self, slot: int) -> bool:
        job = self.slots[slot]
        return job is not None and self._offset(job) is not None

    def void_allowed(self) -> bool:
        """False only when a void would wait for nothing: no arrival ahead and nothing on the machine."""
        return self.time < self.scenario.simu_len - 1 or bool(self.running)

    def decision_open(self) -> bool:
        """Whether the policy has a choice: some visible job can be placed (otherwise every action is void)."""
        for job in self.slots:  # noqa: SIM110 (a loop: any() on a generator costs a frame per call, every step)
            if job is not None and self._offset(job) is not None:
                return True
        return False

    @property
    def done(self) -> bool:
        return (
            self.time >= self.scenario.simu_len - 1
            and not self.running
            and not self.backlog
            and not any(self.slots)  # a Job is always true (and any() calls no __eq__)
        )

    # -- moves --

    def act(self, action: int) -> bool:
        """Place the job of slot ``action`` if it can be placed, else advance one step; returns whether it placed."""
        if 0 <= action < self.scenario.num_nw and self.place(action):
            return True
        self.advance()
        return False

    def settle(self) -> None:
        """Advance time while no decision is open (each such step's every action is void) and the episode runs."""
        while not self.done and not self.decision_open():
            self.advance()

    def place(self, slot: int) -> bool:
        job = self.slots[slot]
        if job is None:
            return False
        offset = self._offset(job)
        if offset is None:
            return False
        need, rows = self._packed[job.id], self._rows
        for t in range(offset, offset + job.length):
            rows[t] -= need  # it fits: no field borrows from the next
        r, units = self.scenario.num_res, self._units
        cut = slice(offset * r, (offset + job.length) * r)
        units[cut] = map(operator.sub, units[cut], job.demand * job.length)
        self._offsets.clear()
        self._not_before.pop(job.id, None)
        self.start[job.id] = self.time + offset
        self.finish[job.id] = self.time + offset + job.length
        self.running.append(job)
        self.slots[slot] = self.backlog.popleft() if self.backlog else None
        return True

    def advance(self) -> float:
        """One time step; returns (and records) its reward."""
        s = self.scenario
        self.time += 1
        del self._rows[0]
        self._rows.append(self._idle_row)
        del self._units[: s.num_res]
        self._units += self._idle_units
        self._offsets.clear()
        self.running = [job for job in self.running if self.finish[job.id] > self.time]
        if self.since_new_job < s.max_track_since_new:
            self.since_new_job += 1
        self._arrive()
        # The reference's sum, term by term in its order (on the machine, in the slots, in the backlog): each sum
        # starts from the one before.
        inverse = self._inverse.__getitem__
        reward = -sum(
            map(inverse, map(_LENGTH, self.backlog)),
            sum(map(inverse, map(_LENGTH, filter(None, self.slots))), sum(map(inverse, map(_LENGTH, self.running)))),
        )
        self.rewards.append(reward)
        return reward

    def _arrive(self) -> None:
        for job in self._arrivals.get(self.time, ()):
            self.since_new_job = 0  # as the reference, for a dropped arrival too
            self._packed[job.id] = self._pack(job.demand)
            empty = _first_empty(self.slots)
            if empty is not None:
                self.slots[empty] = job
                self.entered.append(job)
            elif len(self.backlog) < self.scenario.backlog_size:
                self.backlog.append(job)
                self.entered.append(job)
            else:
                self.dropped.append(job)

    def _pack(self, units: Sequence[int]) -> int:
        return sum(n << shift for n, shift in zip(units, self._shifts, strict=True))

    def _offset(self, job: Job) -> int | None:
        """The earliest offset at which ``job`` fits for its whole length (``earliest_offset`` on packed rows)."""
        offsets = self._offsets
        if job.id in offsets:
            return offsets[job.id]
        start = max(0, self._not_before.get(job.id, 0) - self.time)
        offset = offsets[job.id] = self._search(job, start)
        # Fits nowhere: no run of its length in any rows, so on later rows only one that reaches the last can be.
        self._not_before[job.id] = self.time + (len(self._rows) - job.length + 1 if offset is None else offset)
        return offset

    def _search(self, job: Job, start: int) -> int | None:
        """The first offset from ``start`` at which ``job`` fits for its whole length."""
        need, guards, length = self._packed[job.id], self._guards, job.length
        # first_run, inlined: on this path (every slot, every step) its generator took 1.6x the time of the loop.
        run = 0
        for t, row in enumerate(self._rows[start:], start):
            # Each field is free + 2**bits - need >= 0 (need <= 2**bits): its guard bit stays set iff free >= need.
            run = run + 1 if ((row | guards) - need) & guards == guards else 0
            if run == length:
                return t - length + 1
        return None
