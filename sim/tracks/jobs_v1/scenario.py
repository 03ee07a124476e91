"""A jobs-v1 scenario: DeepRM's cluster, queue and arrival process, with the paper's values as defaults.

The fields are the reference's ``parameters.py`` names. ``num_nw`` defaults to 10 (the paper and the repository's
scripts; its ``parameters.py`` says 5). The job distribution's bounds derive from ``max_job_len`` and
``max_job_size`` with Python 2's integer division, as ``job_distribution.Dist`` computes them.
"""

from __future__ import annotations

from dataclasses import dataclass

# The share of short jobs in the reference's bi-modal distribution (Dist.job_small_chance).
SMALL_JOB_CHANCE = 0.8


@dataclass(frozen=True)
class JobsScenario:
    """One cluster and arrival process; every episode of it draws ``simu_len`` steps of arrivals."""

    num_res: int = 2  # resources per job and machine (v1 is the two-resource problem: CPU and memory)
    res_slot: int = 10  # units of each resource on the machine
    time_horizon: int = 20  # steps of the future the machine's occupancy shows (and reservations reach)
    num_nw: int = 10  # visible job slots
    backlog_size: int = 60  # jobs waiting beyond the slots (an arrival beyond it is dropped, and counted)
    max_job_len: int = 15
    max_job_size: int = 10
    simu_len: int = 50  # arrival steps: a job may arrive at each of steps 0..simu_len-1
    new_job_rate: float = 0.7  # probability that a job arrives at a step
    max_track_since_new: int = 10  # cap of the image's "steps since the last arrival" column

    def __post_init__(self) -> None:
        if self.num_res != 2:
            raise ValueError(f"num_res must be 2 in jobs-v1 (its metrics name two resources), got {self.num_res}")
        if not 0.0 < self.new_job_rate <= 1.0:
            raise ValueError(f"new_job_rate must be in (0, 1], got {self.new_job_rate!r}")
        if self.max_job_len > self.time_horizon:
            raise ValueError(
                f"max_job_len {self.max_job_len} exceeds time_horizon {self.time_horizon}: such a job never fits"
            )
        if self.max_job_size > self.res_slot:
            raise ValueError(
                f"max_job_size {self.max_job_size} exceeds res_slot {self.res_slot}: such a job never fits"
            )
        # The distribution's short lengths are 1..max_job_len//5 and minor demands 1..max_job_size//5.
        if self.max_job_len < 5 or self.max_job_size < 5:
            raise ValueError(
                f"max_job_len and max_job_size must be >= 5 (the distribution's short and minor ranges), "
                f"got {self.max_job_len} and {self.max_job_size}"
            )
        if self.backlog_size % self.time_horizon:
            raise ValueError(
                f"backlog_size {self.backlog_size} must be a multiple of time_horizon {self.time_horizon} "
                "(the image draws the backlog as full columns)"
            )

    # The reference's Dist bounds (inclusive).
    @property
    def short_len(self) -> tuple[int, int]:
        return 1, self.max_job_len // 5

    @property
    def long_len(self) -> tuple[int, int]:
        return self.max_job_len * 2 // 3, self.max_job_len

    @property
    def dominant_demand(self) -> tuple[int, int]:
        return self.max_job_size // 2, self.max_job_size

    @property
    def minor_demand(self) -> tuple[int, int]:
        return 1, self.max_job_size // 5

    @property
    def backlog_width(self) -> int:
        return self.backlog_size // self.time_horizon

    @property
    def void(self) -> int:
        """The void action's integer (DeepRM's ``num_nw``): the wire's and the Gymnasium env's."""
        return self.num_nw


def _mean(bounds: tuple[int, int]) -> float:
    return (bounds[0] + bounds[1]) / 2


def expected_load(scenario: JobsScenario) -> float:
    """The load per resource the arrival process implies: expected work arriving per step over capacity.

    Length and demand are drawn independently and every resource is equally likely to dominate, so the load is
    the same on each resource: ``rate * E[len] * E[demand] / res_slot`` (1.29 at the defaults; DeepRM's paper
    sweeps 0.1..1.9)."""
    s = scenario
    length = SMALL_JOB_CHANCE * _mean(s.short_len) + (1 - SMALL_JOB_CHANCE) * _mean(s.long_len)
    dominant = 1 / s.num_res
    demand = dominant * _mean(s.dominant_demand) + (1 - dominant) * _mean(s.minor_demand)
    return s.new_job_rate * length * demand / s.res_slot
