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

Each decision's payload (``payload()``: what the sandbox's view is built from) is a flat tuple of ints (the wire's
fast path)::

    time, since_new_job, backlog, free[0, 0..R-1], ..., free[T-1, 0..R-1],
    then per slot: length (0 when empty), arrival, demand[0..R-1]

The job drawn for step 0 enters at time 0, before the first decision (the reference never introduces it: its jobs
enter only after its first time step). A drawn episode (``JobDraw``) draws each step's arrival when time reaches the
step, never before: what the env holds, and the work before a decision, are of the steps that have come only. The
episode ends when no arrival can come (``time >= simu_len - 1``) and every job that arrived has finished. A void
that would then wait for nothing (no arrival ahead, nothing on the machine, a job waiting) is refused: every episode
ends, whatever the policy does.
"""

from __future__ import annotations

import itertools
import operator
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from layersched.sim.float_sum import left_sum
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario
from layersched.sim.tracks.jobs_v1.workload import Job, JobDraw

if TYPE_CHECKING:
    import numpy as np

_LENGTH = operator.attrgetter("length")
_ARRIVAL = operator.attrgetter("arrival")
PAYLOAD_HEAD = 3  # time, since_new_job, backlog
_UNKNOWN = -1  # an offset not searched yet (a found one is >= 0, or None)


def payload_layout(scenario: JobsScenario) -> tuple[int, int, int]:
    """Where a decision's payload (layout in the module docstring) ends its free units, how many numbers each slot
    has (length, arrival, then the demand per resource), and how many numbers it has in all."""
    free_end = PAYLOAD_HEAD + scenario.time_horizon * scenario.num_res
    width = 2 + scenario.num_res
    return free_end, width, free_end + scenario.num_nw * width


def _first_empty(slots: Sequence[Job | None]) -> int | None:
    """The first empty slot. (Not ``slots.index(None)``: ``in`` and ``index`` call the dataclass ``Job.__eq__`` on
    every held job, a Python call each, which was a quarter of a time step's cost.)"""
    for i, job in enumerate(slots):
        if job is None:
            return i
    return None


def earliest_offset(units: Sequence[int], num_res: int, demand: Sequence[int], length: int) -> int | None:
    """The first offset at which ``demand`` fits in the free ``units`` (flat, step by step, over the horizon) for
    ``length`` steps, if any: the plain search, over the payload's numbers, that the env's packed one must agree
    with (the view's ``start_offset``)."""
    # Whether each resource fits, step by step (C loops over a strided slice), then all of them at once: a run of
    # ``length`` steps at which the job fits is then a substring, found by bytes.find. (A generator over the rows
    # was a third of the track table's episodes, whose Random asks it of every slot: issue 19's benchmark.)
    fits: Iterator[bool] | None = None
    for r, need in enumerate(demand):
        column = map(operator.ge, units[r::num_res], itertools.repeat(need))
        fits = column if fits is None else map(operator.and_, fits, column)
    if fits is None:
        raise ValueError(f"a job's demand names no resource, got {demand!r}")
    offset = bytes(fits).find(b"\x01" * length)
    return None if offset < 0 else offset


class _Inverse(dict[int, float]):
    """``1.0 / n`` by ``n``, computed on first sight: each step's reward sums one per job in the system."""

    def __missing__(self, n: int) -> float:
        value = self[n] = 1.0 / n
        return value


class JobsEnv:
    """One episode of ``scenario`` on the jobs ``jobs``: drawn step by step as time comes to each (``JobDraw``, the
    sandboxed episode's), or given (in arrival order; a drawn workload has at most one per step, a test's may have
    several)."""

    def __init__(self, scenario: JobsScenario, jobs: JobDraw | Sequence[Job]) -> None:
        s = self.scenario = scenario
        # (At most 29 attributes: Python 3.11 keeps up to 29 in the instance's compact values, keyed by a table
        # shared with the class; a 30th gives every instance a dict of its own, which made a decision 3% dearer, by
        # count_jobs.py.)
        # Each step's arrivals, asked once per step in order while a job may still arrive (up to _last_arrival).
        self._arrivals: Callable[[int], Sequence[Job] | None]
        given: tuple[Job, ...] = ()
        if isinstance(jobs, JobDraw):
            self._arrivals, self._last_arrival = jobs.arrivals, jobs.last_step
        else:
            given = tuple(jobs)
            by_step: dict[int, list[Job]] = {}
            for job in given:
                by_step.setdefault(job.arrival, []).append(job)
            self._arrivals, self._last_arrival = by_step.get, max(by_step, default=-1)
        # The machine's free units, one int per step of the horizon holding every resource's count in a field of
        # ``_bits + 1`` bits, its top bit a guard: a fit test on a step is one subtraction (see ``_offset``). Numpy on
        # rows of two units cost more in calls than the search itself (issue 19's benchmark, bench_jobs.py). A drawn
        # demand is at most max_job_size; a given one may be larger (it then fits nowhere, but must not borrow).
        self._bits = max([s.res_slot, s.max_job_size, *(need for job in given for need in job.demand)]).bit_length()
        self._shifts = [r * (self._bits + 1) for r in range(s.num_res)]
        self._guards = sum(1 << (shift + self._bits) for shift in self._shifts)
        self._idle_row = self._pack([s.res_slot] * s.num_res)
        self._rows = [self._idle_row] * s.time_horizon
        self._packed: dict[int, int] = {}  # job id -> its demand, packed as a row
        self._length: dict[int, int] = {}  # job id -> its length (for the offsets a placement keeps)
        # The same units flat, step by step (the payload's layout), kept beside the packed rows by place and advance:
        # unpacking the rows for every decision's payload cost more than keeping both.
        self._idle_units = [s.res_slot] * s.num_res
        self._units = self._idle_units * s.time_horizon
        # job id -> its earliest offset on the present rows (asked by decision_open, the reply's check and place);
        # place and advance keep the offsets that they cannot have changed (see there).
        self._offsets: dict[int, int | None] = {}
        # job id -> a step before which it cannot start: rows only lose units (place) or shift by one with an idle
        # row behind (advance), so where a job did not fit it still does not, and a search starts there.
        self._not_before: dict[int, int] = {}
        self._inverse = _Inverse()  # length -> 1.0 / length (the reward's terms)
        self.time = 0
        # Read freely; changed by place and _arrive only, through _fill, which keeps the payload's numbers of the
        # slots beside them (building them at every decision was half of the payload's cost).
        self.slots: list[Job | None] = [None] * s.num_nw
        self._slot_width = payload_layout(s)[1]
        self._slot_numbers = [0] * (s.num_nw * self._slot_width)
        self.backlog: deque[Job] = deque()
        # Placed (running or reserved), not finished, in placement order; a tuple, so that each step's record of who
        # was in the system (``_in_system``) can hold it as it is.
        self.running: tuple[Job, ...] = ()
        self.start: dict[int, int] = {}  # job id -> start step
        self.finish: dict[int, int] = {}
        self._finish_steps: set[int] = set()  # the steps at which some placed job finishes
        self.entered: list[Job] = []  # arrivals that found a slot or backlog room, in arrival order
        self.dropped: list[Job] = []
        self.since_new_job = 0
        # Who was in the system after each time step (on the machine, in the slots, in the backlog): the steps'
        # rewards are computed from these when asked (``rewards``), not at every step, since the scored path never
        # asks (issue 19's benchmark: the sums were 7% of a decision's cost, the copies are 2%).
        self._in_system: list[tuple[tuple[Job, ...], tuple[Job | None, ...], tuple[Job, ...]]] = []
        self._rewards: list[float] = []
        if self._last_arrival >= 0:
            self._arrive(self._arrivals(0))

    @property
    def jobs(self) -> list[Job]:
        """The jobs that have arrived so far (entered or dropped), in arrival order (a new list)."""
        # Stable: within a step, every arrival after the first dropped one is dropped too.
        return sorted([*self.entered, *self.dropped], key=_ARRIVAL)

    @property
    def free(self) -> np.ndarray:
        """``free[t, r]``: units of resource ``r`` free ``t`` steps from now (a new array: writing to it changes
        nothing)."""
        import numpy as np  # here: an episode and the track's table run without numpy (view.py's docstring)

        s = self.scenario
        return np.array(self.free_units(), dtype=np.int64).reshape(s.time_horizon, s.num_res)

    @property
    def rewards(self) -> list[float]:
        """One reward per time step so far: minus the sum of 1/len over the jobs in the system after the step, summed
        term by term in the reference's order (on the machine, in the slots, in the backlog; each sum starts from
        the one before, left to right on every Python: ``left_sum``), so that each is exactly the reference's float
        (a new list: writing to it changes nothing)."""
        inverse = self._inverse.__getitem__
        for running, slots, backlog in self._in_system[len(self._rewards) :]:
            machine = left_sum(map(inverse, map(_LENGTH, running)))
            waiting = left_sum(map(inverse, map(_LENGTH, filter(None, slots))), machine)
            self._rewards.append(-left_sum(map(inverse, map(_LENGTH, backlog)), waiting))
        return self._rewards.copy()

    def free_units(self) -> list[int]:
        """``free`` flattened, step by step (the payload's layout)."""
        return self._units.copy()

    def payload(self) -> tuple[int, ...]:
        """The decision payload of the present state (layout in the module docstring)."""
        return (self.time, self.since_new_job, len(self.backlog), *self._units, *self._slot_numbers)

    # -- what a decision may do --

    def placeable(self, slot: int) -> bool:
        job = self.slots[slot]
        return job is not None and self._offset(job) is not None

    def void_allowed(self) -> bool:
        """False only when a void would wait for nothing: no arrival ahead and nothing on the machine."""
        return self.time < self.scenario.simu_len - 1 or bool(self.running)

    def decision_open(self) -> bool:
        """Whether the policy has a choice: some visible job can be placed (otherwise every action is void)."""
        offsets = self._offsets
        for job in self.slots:  # a loop: any() on a generator costs a frame per call, every step
            # _offset's own lookup first, inline: most of the offsets asked here are known.
            if job is not None and offsets.get(job.id, _UNKNOWN) is not None and self._offset(job) is not None:
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

    def settle(self) -> bool:
        """Advance time while no decision is open (each such step's every action is void) and the episode runs;
        returns whether a decision is open (else the episode has ended)."""
        while not self.done:
            if self.decision_open():
                return True
            self.advance()
        return False

    def place(self, slot: int) -> bool:
        job = self.slots[slot]
        if job is None:
            return False
        offset = self._offset(job)
        if offset is None:
            return False
        need, rows, end = self._packed[job.id], self._rows, offset + job.length
        rows[offset:end] = map(operator.sub, rows[offset:end], itertools.repeat(need))  # it fits: no field borrows
        r, units = self.scenario.num_res, self._units
        cut = slice(offset * r, (offset + job.length) * r)
        units[cut] = map(operator.sub, units[cut], job.demand * job.length)
        # Steps offset..end - 1 lost units, no other: a job that fitted nowhere still fits nowhere, and one whose
        # run lies clear of them still fits first where it did (the steps before it only lost units too). The others
        # (this job among them) search again, from where they fitted (_not_before).
        length = self._length
        self._offsets = {
            other: at for other, at in self._offsets.items() if at is None or at >= end or at + length[other] <= offset
        }
        self._not_before.pop(job.id, None)
        self.start[job.id] = self.time + offset
        self.finish[job.id] = self.time + offset + job.length
        self._finish_steps.add(self.time + offset + job.length)
        self.running += (job,)
        self._fill(slot, self.backlog.popleft() if self.backlog else None)
        return True

    def advance(self) -> None:
        """One time step (its reward is in ``rewards``)."""
        s = self.scenario
        self.time += 1
        del self._rows[0]
        self._rows.append(self._idle_row)
        del self._units[: s.num_res]
        self._units += self._idle_units
        # The steps shifted by one, an idle one behind: a job that fitted first at offset o >= 1 fits first at o - 1
        # (an earlier fit would have been an earlier one before the shift). One that fitted at 0 (its first step
        # is gone) or nowhere (the idle step may complete a run) searches again, from _not_before.
        self._offsets = {other: at - 1 for other, at in self._offsets.items() if at}
        if self.time in self._finish_steps:  # most steps, none finishes: the machine's list stays as it is
            self._finish_steps.remove(self.time)
            self.running = tuple([job for job in self.running if self.finish[job.id] > self.time])
        if self.since_new_job < s.max_track_since_new:
            self.since_new_job += 1
        if self.time <= self._last_arrival:
            arrived = self._arrivals(self.time)
            if arrived:
                self._arrive(arrived)
        self._in_system.append((self.running, tuple(self.slots), tuple(self.backlog)))

    def _arrive(self, arrived: Sequence[Job] | None) -> None:
        for job in arrived or ():
            self.since_new_job = 0  # as the reference, for a dropped arrival too
            self._packed[job.id] = self._pack(job.demand)
            self._length[job.id] = job.length
            empty = _first_empty(self.slots)
            if empty is not None:
                self._fill(empty, job)
                self.entered.append(job)
            elif len(self.backlog) < self.scenario.backlog_size:
                self.backlog.append(job)
                self.entered.append(job)
            else:
                self.dropped.append(job)

    def _fill(self, slot: int, job: Job | None) -> None:
        self.slots[slot] = job
        width = self._slot_width
        numbers = [0] * width if job is None else [job.length, job.arrival, *job.demand]
        self._slot_numbers[slot * width : slot * width + width] = numbers

    def _pack(self, units: Sequence[int]) -> int:
        return sum(n << shift for n, shift in zip(units, self._shifts, strict=True))

    def _offset(self, job: Job) -> int | None:
        """The earliest offset at which ``job`` fits for its whole length (``earliest_offset`` on packed rows)."""
        offsets = self._offsets
        known = offsets.get(job.id, _UNKNOWN)
        if known != _UNKNOWN:
            return known
        start = max(0, self._not_before.get(job.id, 0) - self.time)
        offset = offsets[job.id] = self._search(job, start)
        # Fits nowhere: no run of its length in any rows, so on later rows only one that reaches the last can be.
        self._not_before[job.id] = self.time + (len(self._rows) - job.length + 1 if offset is None else offset)
        return offset

    def _search(self, job: Job, start: int) -> int | None:
        """The first offset from ``start`` at which ``job`` fits for its whole length."""
        need, guards, length = self._packed[job.id], self._guards, job.length
        # A run-length loop over the packed rows: searches start where the job could not start before, so they are
        # short, and this costs less than earliest_offset on the units (issue 19's benchmark: 8% more per decision).
        run = 0
        for t, row in enumerate(self._rows[start:], start):
            # Each field is free + 2**bits - need >= 0 (need <= 2**bits): its guard bit stays set iff free >= need.
            run = run + 1 if ((row | guards) - need) & guards == guards else 0
            if run == length:
                return t - length + 1
        return None
