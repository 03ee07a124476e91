"""What a jobs-v1 policy sees: the present state, rebuilt fresh for every decision from the decision's payload.

The payload is a flat tuple of ints (the wire's fast path)::

    time, since_new_job, backlog, free[0, 0..R-1], ..., free[T-1, 0..R-1],
    then per slot: length (0 when empty), arrival, demand[0..R-1]

It holds the present only: the machine's free units over the horizon (what placed jobs have reserved), the visible
jobs and when they arrived, the backlog's length and the steps since the last arrival. Nothing of future arrivals,
nor of the workload's seed. Because each decision's view is new, a policy may write to it freely.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from layersched.sim.tracks.jobs_v1.env import JobsEnv, earliest_offset
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario

_HEAD = 3  # time, since_new_job, backlog


@dataclass(frozen=True)
class VisibleJob:
    """A job in a visible slot: its length in steps, the step it arrived at, its demand per resource."""

    length: int
    arrival: int
    demand: tuple[int, ...]


def payload(env: JobsEnv) -> tuple[int, ...]:
    """The decision payload of ``env``'s present state (layout in the module docstring)."""
    s = env.scenario
    out = [env.time, env.since_new_job, len(env.backlog), *env.free_units()]
    for job in env.slots:
        if job is None:
            out.extend([0] * (2 + s.num_res))
        else:
            out.extend([job.length, job.arrival, *job.demand])
    return tuple(out)


def payload_size(scenario: JobsScenario) -> int:
    return _HEAD + scenario.time_horizon * scenario.num_res + scenario.num_nw * (2 + scenario.num_res)


class JobsView:
    """The policy's ``env``: the machine's occupancy over the horizon, the visible jobs, the backlog and the time."""

    def __init__(self, scenario: JobsScenario, values: Sequence[int]) -> None:
        s = self.scenario = scenario
        if len(values) != payload_size(s):
            raise ValueError(f"a jobs-v1 payload has {payload_size(s)} numbers for this scenario, got {len(values)}")
        self.time, self.since_new_job, self.backlog = map(int, values[:_HEAD])
        cut = _HEAD + s.time_horizon * s.num_res
        # free[t, r]: units of resource r free t steps from now (row 0 is the current step).
        self.free = np.array(values[_HEAD:cut], dtype=np.int64).reshape(s.time_horizon, s.num_res)
        width = 2 + s.num_res
        slots: list[VisibleJob | None] = []
        for start in range(cut, cut + s.num_nw * width, width):
            if values[start]:
                length, arrival, *demand = map(int, values[start : start + width])
                slots.append(VisibleJob(length, arrival, tuple(demand)))
            else:
                slots.append(None)
        self.slots = slots

    @property
    def used(self) -> np.ndarray:
        """Units in use (or reserved) per step of the horizon and resource: ``res_slot - free``."""
        return self.scenario.res_slot - self.free

    @property
    def void(self) -> None:
        """What to return for the void action."""
        return None

    def fits_now(self, slot: int) -> bool:
        """Whether the job of ``slot`` fits from the current step for its whole length (what the baselines ask)."""
        job = self.slots[slot]
        if job is None:
            return False
        # On a list of the rows' units against the demand repeated per row: numpy's comparison and all() on a few
        # units cost more in calls than the test itself.
        return all(map(operator.ge, self.free[: job.length].ravel().tolist(), job.demand * job.length))

    def start_offset(self, slot: int) -> int | None:
        """The offset from now at which the job of ``slot`` would start if placed (None: empty, or fits nowhere)."""
        job = self.slots[slot]
        if job is None:
            return None
        return earliest_offset(self.free.tolist(), job.length, job.demand, self.scenario.time_horizon)

    def void_allowed(self) -> bool:
        """False only when a void would wait for nothing (no arrival ahead, nothing running): it is refused then."""
        idle = bool((self.free == self.scenario.res_slot).all())
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
