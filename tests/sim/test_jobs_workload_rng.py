"""The jobs workload's pure-Python ``RandomState`` draws what ``numpy.random.RandomState`` draws, call for call."""

from __future__ import annotations

import random

import numpy as np
import pytest

from layersched.sim.tracks.jobs_v1.scenario import JobsScenario
from layersched.sim.tracks.jobs_v1.workload import RandomState, draw_jobs

RANGES = [(0, 1), (0, 2), (0, 3), (1, 4), (1, 11), (0, 16), (0, 17), (5, 6), (-3, 7), (0, 1 << 20), (0, 1 << 32)]

SEEDS: list[int | list[int]] = [*range(51), 2**32 - 1, 123456789]
_words = random.Random(19)
SEEDS += [[5, 7], [0], [2**32 - 1] * 3] + [[_words.getrandbits(32) for _ in range(8)] for _ in range(10)]
SEEDS += [[_words.getrandbits(32) for _ in range(700)]]  # longer than the state: init_by_array's other loop bound


def _draws(state: RandomState | np.random.RandomState, calls: random.Random) -> list[float | int]:
    out: list[float | int] = []
    for _ in range(3000):
        if calls.random() < 0.4:
            out.append(float(state.rand()))
        else:
            low, high = RANGES[calls.randrange(len(RANGES))]
            out.append(int(state.randint(low, high)))
    return out


@pytest.mark.parametrize("seed", SEEDS, ids=lambda seed: str(seed) if isinstance(seed, int) else f"words{len(seed)}")
def test_draws_equal_numpy_legacy_randomstate(seed: int | list[int]) -> None:
    assert _draws(RandomState(seed), random.Random(1)) == _draws(np.random.RandomState(seed), random.Random(1))


@pytest.mark.parametrize("seed", [0, 7, [5, 7], [1, 2, 3, 4, 5, 6, 7, 8]], ids=["0", "7", "words2", "words8"])
@pytest.mark.parametrize("rate", [0.3, 0.7, 1.0], ids=["rate0.3", "rate0.7", "rate1"])
def test_drawn_jobs_equal_numpy_legacy_randomstate(seed: int | list[int], rate: float) -> None:
    scenario = JobsScenario(new_job_rate=rate)
    assert draw_jobs(scenario, RandomState(seed)) == draw_jobs(scenario, np.random.RandomState(seed))


@pytest.mark.parametrize(
    "seed, message",
    [
        (-1, "Seed must be between 0 and 2**32 - 1, not -1"),
        (2**32, "Seed must be between 0 and 2**32 - 1, not 4294967296"),
        ([], "Seed words must be a non-empty sequence in [0, 2**32), not []"),
        ([1, 2**32], "Seed words must be a non-empty sequence in [0, 2**32), not [1, 4294967296]"),
    ],
    ids=["negative", "too-big", "empty", "word-too-big"],
)
def test_seeds_numpy_refuses_are_refused(seed: int | list[int], message: str) -> None:
    with pytest.raises(ValueError) as error:
        RandomState(seed)
    assert str(error.value) == message
