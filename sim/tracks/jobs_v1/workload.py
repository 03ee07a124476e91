"""An episode's jobs: the reference's ``job_distribution.generate_sequence_work``, call for call.

A seeded episode (``EpisodeSpec(seed=N)``, whose ``workload_rng()`` is a ``SeededRandom``) draws from
``numpy.random.RandomState(N)``, exactly as the reference's ``np.random.seed(N)`` then its draws: ``rand()`` for an
arrival, then ``rand()`` for short or long, ``randint`` for the length, ``randint(0, num_res)`` for the dominant
resource and one ``randint`` per resource. So ``{ seed = N }`` is the reference's first sequence of seed N.

Any other generator (a keyed, hidden episode's ``KeyedRandom``) seeds the ``RandomState`` with ``SEED_WORDS``
32-bit words drawn from it: 256 bits, so the key's entropy is kept, and nothing of the Mersenne Twister's outputs
reveals the key. (A plain ``random.Random(N)`` is such an "other" generator: it gives another workload than seed N.)
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from layersched.sim.episodes import SeededRandom
from layersched.sim.tracks.jobs_v1.scenario import SMALL_JOB_CHANCE, JobsScenario

SEED_WORDS = 8


@dataclass(frozen=True)
class Job:
    """A job as it arrives: its index in the episode (arrival order), step, length and demand per resource."""

    id: int
    arrival: int
    length: int
    demand: tuple[int, ...]


def workload_state(workload: random.Random) -> np.random.RandomState:
    """The legacy numpy generator an episode's jobs are drawn from (see the module docstring)."""
    if isinstance(workload, SeededRandom) and workload.origin is not None:
        seed = workload.origin
        if 0 <= seed < 1 << 32:
            return np.random.RandomState(seed)  # what the reference's np.random.seed(seed) sets
        # Beyond numpy's seed range (the reference cannot take such a seed): its 32-bit words, low first.
        return np.random.RandomState([(seed >> (32 * i)) & 0xFFFFFFFF for i in range((seed.bit_length() + 31) // 32)])
    return np.random.RandomState([workload.getrandbits(32) for _ in range(SEED_WORDS)])


def draw_jobs(scenario: JobsScenario, state: np.random.RandomState) -> list[Job]:
    """The jobs of one episode, in arrival order (at most one per step, as the reference)."""
    s = scenario
    jobs: list[Job] = []
    for step in range(s.simu_len):
        if state.rand() < s.new_job_rate:
            low, high = s.short_len if state.rand() < SMALL_JOB_CHANCE else s.long_len
            length = int(state.randint(low, high + 1))
            dominant = int(state.randint(0, s.num_res))
            demand = []
            for r in range(s.num_res):
                low, high = s.dominant_demand if r == dominant else s.minor_demand
                demand.append(int(state.randint(low, high + 1)))
            jobs.append(Job(len(jobs), step, length, tuple(demand)))
    return jobs
