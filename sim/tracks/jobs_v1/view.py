"""What a jobs-v1 policy sees: the present state, rebuilt fresh for every decision from the decision's payload.

The payload is ``JobsEnv.payload()``, a flat tuple of ints (its layout in env.py's docstring). It holds the present
only: the machine's free units over the horizon (what placed jobs have reserved), the visible jobs and when they
arrived, the backlog's length and the steps since the last arrival. Nothing of future arrivals, nor of the
workload's seed. Because each decision's view is new, a policy may write to it freely.

numpy is imported by the first use of ``free`` (or ``used``, ``observe``), not before: the view's own helpers read
the payload's numbers until then, and a policy that never asks for an array (the baselines: the track's table)
never imports numpy, which was half of that table's process (issue 19's benchmark).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple

from layersched.sim.tracks.jobs_v1.env import PAYLOAD_HEAD, earliest_offset, payload_layout
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario

if TYPE_CHECKING:
    import numpy as np

_new_tuple = tuple.__new__


class VisibleJob(NamedTuple):
    """A job in a visible slot: its length in steps, the step it arrived at, its demand per resource.

    A named tuple (immutable, as the frozen dataclass it was): up to ``num_nw`` are built per decision, and a
    tuple's construction costs half a frozen dataclass's (issue 19's benchmark)."""

    length: int
    arrival: int
    demand: tuple[int, ...]


def fits_from_now(units: Sequence[int], num_res: int, job: VisibleJob) -> bool:
    """Whether ``job`` fits in the free ``units`` (flat, step by step) from step 0 for its whole length: each unit of
    its first ``length`` steps against its demand repeated per step (on a few ints, plain Python costs less in
    calls than numpy's comparison)."""
    return all(map(operator.ge, units[: job.length * num_res], job.demand * job.length))


class JobsView:
    """The policy's ``env``: the machine's occupancy over the horizon, the visible jobs, the backlog and the time."""

    def __init__(
        self, scenario: JobsScenario, values: Sequence[int], seen: dict[tuple[int, ...], VisibleJob] | None = None
    ) -> None:
        """The view of the payload ``values``. ``seen``: the visible jobs of earlier views, by their numbers in the
        payload, to be shared rather than built again (a job stays in its slot over many decisions; a VisibleJob
        is immutable, so sharing it between views is safe); a replica keeps one per episode."""
        s = self.scenario = scenario
        cut, width, size = payload_layout(s)
        if len(values) != size:
            raise ValueError(f"a jobs-v1 payload has {size} numbers for this scenario, got {len(values)}")
        # The payload's numbers are ints (the trusted side's, through the wire's JSON): taken as they are, as a
        # tuple (its slices, each job's demand, are tuples too; tuple() returns a tuple itself).
        values = tuple(values)
        self.time, self.since_new_job, self.backlog = values[0], values[1], values[2]
        # free's numbers, step by step: what the helpers read until ``free`` is built (see free_units).
        self._free_units = values[PAYLOAD_HEAD:cut]
        jobs = {} if seen is None else seen
        slots: list[VisibleJob | None] = []
        for i in range(cut, size, width):
            if not values[i]:
                slots.append(None)
                continue
            numbers = values[i : i + width]
            job = jobs.get(numbers)
            if job is None:
                # tuple.__new__ is what VisibleJob(...) ends in, without the call of its Python-level __new__.
                job = jobs[numbers] = _new_tuple(VisibleJob, (numbers[0], numbers[1], numbers[2:]))
            slots.append(job)
        self.slots = slots

    @cached_property
    def free(self) -> np.ndarray:
        """``free[t, r]``: units of resource ``r`` free ``t`` steps from now (row 0 is the current step), after every
        placed job's reservation; int64 of shape (time_horizon, num_res), built on first use."""
        import numpy as np

        s = self.scenario
        return np.array(self._free_units, dtype=np.int64).reshape(s.time_horizon, s.num_res)

    @property
    def used(self) -> np.ndarray:
        """Units in use (or reserved) per step of the horizon and resource: ``res_slot - free``."""
        return self.scenario.res_slot - self.free

    @property
    def void(self) -> None:
        """What to return for the void action."""
        return None

    def free_units(self) -> Sequence[int]:
        """``free`` flattened, step by step, as ints: the payload's numbers, or once ``free`` is built, its (a policy
        may write to ``free`` and ask the helpers about the state it made)."""
        built = self.__dict__.get("free")  # cached_property's slot: present once free has been read or assigned
        return self._free_units if built is None else built.ravel().tolist()

    def free_row(self, offset: int) -> list[int]:
        """The units free ``offset`` steps from now, one int per resource (``free[offset]`` as a list)."""
        r = self.scenario.num_res
        if not 0 <= offset < self.scenario.time_horizon:
            raise IndexError(f"offset {offset} is outside the horizon 0..{self.scenario.time_horizon - 1}")
        return list(self.free_units()[offset * r : offset * r + r])

    def fits_now(self, slot: int) -> bool:
        """Whether the job of ``slot`` fits from the current step for its whole length (what the baselines ask)."""
        job = self.slots[slot]
        return job is not None and fits_from_now(self.free_units(), self.scenario.num_res, job)

    def start_offset(self, slot: int) -> int | None:
        """The offset from now at which the job of ``slot`` would start if placed (None: empty, or fits nowhere)."""
        job = self.slots[slot]
        if job is None:
            return None
        return earliest_offset(self.free_units(), self.scenario.num_res, job.demand, job.length)

    def void_allowed(self) -> bool:
        """False only when a void would wait for nothing (no arrival ahead, nothing running): it is refused then."""
        idle = all(units == self.scenario.res_slot for units in self.free_units())
        return self.time < self.scenario.simu_len - 1 or not idle

    def mask(self) -> list[bool]:
        """The allowed actions, DeepRM's numbering: slots 0..num_nw-1 whose job can be placed, then void."""
        return [self.start_offset(i) is not None for i in range(self.scenario.num_nw)] + [self.void_allowed()]

    def observe(self) -> np.ndarray:
        """DeepRM's image state, float32 of shape (time_horizon, width) with width =
        (res_slot + max_job_size * num_nw) * num_res + backlog_size // time_horizon + 1: per resource the machine's
        used units per step (packed to the left: the reference colours each job, from numpy's global rng) and one
        block per slot (its length by its demand), then the backlog's length in columns, then the steps since the
        last arrival over ``max_track_since_new``."""
        s = self.scenario
        import numpy as np

        image = np.zeros((s.time_horizon, image_width(s)), dtype=np.float32)
        col = 0
        used = self.used
        for r in range(s.num_res):
            for t in range(s.time_horizon):
                image[t, col : col + used[t, r]] = 1.0
            col += s.res_slot
            for job in self.slots:
                if job is not None:
                    image[: job.length, col : col + job.demand[r]] = 1.0
                col += s.max_job_size
        rows, rest = divmod(self.backlog, s.backlog_width)
        image[:rows, col : col + s.backlog_width] = 1.0
        if rest:
            image[rows, col : col + rest] = 1.0
        col += s.backlog_width
        image[:, col] = self.since_new_job / s.max_track_since_new
        return image


def image_width(scenario: JobsScenario) -> int:
    s = scenario
    return (s.res_slot + s.max_job_size * s.num_nw) * s.num_res + s.backlog_width + 1
