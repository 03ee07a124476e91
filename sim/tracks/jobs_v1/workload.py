"""An episode's jobs: the reference's ``job_distribution.generate_sequence_work``, call for call.

A seeded episode (``EpisodeSpec(seed=N)``, whose ``workload_rng()`` is a ``SeededRandom``) draws from
``numpy.random.RandomState(N)``, exactly as the reference's ``np.random.seed(N)`` then its draws: ``rand()`` for an
arrival, then ``rand()`` for short or long, ``randint`` for the length, ``randint(0, num_res)`` for the dominant
resource and one ``randint`` per resource. So ``{ seed = N }`` is the reference's first sequence of seed N.

Any other generator (a keyed, hidden episode's ``KeyedRandom``) seeds the ``RandomState`` with ``SEED_WORDS``
32-bit words drawn from it: 256 bits, so the key's entropy is kept, and nothing of the Mersenne Twister's outputs
reveals the key. (A plain ``random.Random(N)`` is such an "other" generator: it gives another workload than seed N.)

The ``RandomState`` here is numpy's legacy generator in pure Python, so drawing a workload needs no numpy: its
Mersenne Twister is Python's own (``random.Random``), given the state numpy's seeding sets; ``rand()`` is
``random()`` (both take 53 bits from two words), and ``randint`` is numpy's legacy masked rejection.
tests/sim/test_jobs_workload_rng.py pins its draws to ``numpy.random.RandomState``'s.

An episode draws its jobs step by step as its time reaches each step (``JobDraw``, what the trusted ``JobsEnv``
plays from): so the work before a decision depends on the steps that have come only, never on the episode's future
(a spare episode process timing its wait for step 0 learns nothing of what is still to come). The stream is the one
``draw_jobs`` draws all at once, call for call.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

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


_MASK32 = 0xFFFFFFFF
_N = 624


def _init_genrand(seed: int) -> list[int]:
    word = seed & _MASK32
    mt = [word]
    for i in range(1, _N):
        word = (1812433253 * (word ^ (word >> 30)) + i) & _MASK32
        mt.append(word)
    return mt


@functools.cache
def _init_by_array_base() -> tuple[int, ...]:
    """init_by_array's starting state, the same for every key: computed once (a third of a keyed episode's
    seeding)."""
    return tuple(_init_genrand(19650218))


def _init_by_array(key: Sequence[int]) -> list[int]:
    mt = list(_init_by_array_base())
    i, j = 1, 0
    for _ in range(max(_N, len(key))):
        prev = mt[i - 1]
        mt[i] = ((mt[i] ^ ((prev ^ (prev >> 30)) * 1664525)) + key[j] + j) & _MASK32
        i, j = i + 1, j + 1
        if i >= _N:
            mt[0], i = mt[_N - 1], 1
        if j >= len(key):
            j = 0
    for _ in range(_N - 1):
        prev = mt[i - 1]
        mt[i] = ((mt[i] ^ ((prev ^ (prev >> 30)) * 1566083941)) - i) & _MASK32
        i += 1
        if i >= _N:
            mt[0], i = mt[_N - 1], 1
    mt[0] = 0x80000000  # MSB is 1, assuring a non-zero initial state
    return mt


class RandomState:
    """``numpy.random.RandomState(seed)``'s ``rand()`` and ``randint(low, high)``, without numpy.

    ``seed`` is an int in [0, 2**32) (numpy's ``init_genrand``) or a non-empty sequence of 32-bit words
    (``init_by_array``), as numpy's legacy seeding takes them.
    """

    __slots__ = ("_mt",)

    def __init__(self, seed: int | Sequence[int]) -> None:
        if isinstance(seed, int):
            if not 0 <= seed <= _MASK32:
                raise ValueError(f"Seed must be between 0 and 2**32 - 1, not {seed}")
            words = _init_genrand(seed)
        else:
            if not seed or any(not 0 <= word <= _MASK32 for word in seed):
                raise ValueError(f"Seed words must be a non-empty sequence in [0, 2**32), not {seed!r}")
            words = _init_by_array(seed)
        self._mt = random.Random(0)  # its state is replaced below (a seed spares reading os.urandom)
        self._mt.setstate((3, (*words, _N), None))

    def rand(self) -> float:
        """A float in [0, 1), as numpy's ``rand()`` (genrand_res53, which is also Python's ``random()``)."""
        return self._mt.random()

    def randint(self, low: int, high: int) -> int:
        """An int in [low, high), as numpy's legacy ``randint``: masked rejection over 32-bit words."""
        span = high - 1 - low
        if span <= 0:
            if span < 0:
                raise ValueError(f"low >= high: {low} >= {high}")
            return low
        if span > _MASK32:
            raise ValueError(f"range wider than 2**32 (numpy draws 64-bit words then): {low}, {high}")
        mask = (1 << span.bit_length()) - 1
        draw = self._mt.getrandbits
        value = draw(32) & mask
        while value > span:
            value = draw(32) & mask
        return low + value


class LegacyDraws(Protocol):
    """What ``JobDraw`` calls: this module's ``RandomState`` or numpy's."""

    def rand(self) -> float: ...

    def randint(self, low: int, high: int) -> int: ...


def workload_state(workload: random.Random) -> RandomState:
    """The legacy numpy generator an episode's jobs are drawn from (see the module docstring)."""
    if isinstance(workload, SeededRandom) and workload.origin is not None:
        seed = workload.origin
        if 0 <= seed < 1 << 32:
            return RandomState(seed)  # what the reference's np.random.seed(seed) sets
        # Beyond numpy's seed range (the reference cannot take such a seed): its 32-bit words, low first.
        return RandomState([(seed >> (32 * i)) & 0xFFFFFFFF for i in range((seed.bit_length() + 31) // 32)])
    return RandomState([workload.getrandbits(32) for _ in range(SEED_WORDS)])


class JobDraw:
    """One episode's jobs, drawn a step at a time: ``arrivals(step)`` draws step ``step``'s arrival (none or one job)
    when it is asked, the steps in order from 0, so nothing of a later step is drawn before it comes. The draws are
    ``draw_jobs``'s, in its order: ``rand()`` for an arrival, then, if a job arrives, ``rand()`` for short or long,
    ``randint`` for the length, for the dominant resource and for each resource's demand."""

    __slots__ = ("_count", "_last", "_next", "_rand", "_randint", "_sizes", "scenario")

    def __init__(self, scenario: JobsScenario, state: LegacyDraws) -> None:
        s = self.scenario = scenario
        self._rand, self._randint = state.rand, state.randint
        # The scenario's bounds, read once (they are properties): every step asks for some of them.
        self._sizes = (s.new_job_rate, s.short_len, s.long_len, s.dominant_demand, s.minor_demand, range(s.num_res))
        self._last = s.simu_len - 1
        self._next = 0  # the step to draw next
        self._count = 0  # jobs drawn so far (the next job's id)

    @property
    def last_step(self) -> int:
        """The last step at which a job may arrive."""
        return self._last

    def arrivals(self, step: int) -> tuple[Job, ...]:
        """The jobs arriving at ``step`` (at most one, as the reference); ``step`` must be the step after the last one
        asked (0 first), and at most ``last_step``."""
        if step != self._next or step > self._last:
            raise ValueError(f"step {step} asked of a draw whose next step is {self._next} (last {self._last})")
        self._next = step + 1
        rate, short, long, dominant_demand, minor_demand, resources = self._sizes
        rand, randint = self._rand, self._randint
        if not rand() < rate:
            return ()
        low, high = short if rand() < SMALL_JOB_CHANCE else long
        length = int(randint(low, high + 1))
        dominant = int(randint(0, len(resources)))
        demand = []
        for r in resources:
            low, high = dominant_demand if r == dominant else minor_demand
            demand.append(int(randint(low, high + 1)))
        job = Job(self._count, step, length, tuple(demand))
        self._count += 1
        return (job,)


def draw_jobs(scenario: JobsScenario, state: LegacyDraws) -> list[Job]:
    """The jobs of one episode, in arrival order (at most one per step, as the reference): ``JobDraw``'s, all at
    once."""
    arrivals = JobDraw(scenario, state).arrivals
    return [job for step in range(scenario.simu_len) for job in arrivals(step)]
