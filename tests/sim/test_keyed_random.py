"""The keyed generator: reproducible per key, different across keys, and distributed like the lab's generator."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from layersched.sim.keyed_random import KeyedRandom
from layersched.sim.tracks.layers_v1.scenario import Scenario
from layersched.sim.tracks.layers_v1.workload import NodeSpec, Task, draw_episode

KEY = bytes(range(16))
OTHER_KEY = bytes(range(1, 17))
ALPHA = 1e-3  # the draws are fixed by the keys and seeds below, so these tests are deterministic


def episode(rng: random.Random, scenario: Scenario) -> tuple[list[NodeSpec], list[Task]]:
    nodes, tasks = draw_episode(scenario, rng)
    return nodes, tasks


SMALL = Scenario(n_tasks=50)


def test_same_key_same_episode() -> None:
    assert episode(KeyedRandom(KEY, "e1"), SMALL) == episode(KeyedRandom(KEY, "e1"), SMALL)


@pytest.mark.parametrize(
    ("a", "b"),
    [((KEY, "e1"), (OTHER_KEY, "e1")), ((KEY, "e1"), (KEY, "e2")), ((KEY, ""), (KEY + b"\0", ""))],
    ids=["other-key", "other-label", "longer-key"],
)
def test_different_key_or_label_different_episode(a: tuple[bytes, str], b: tuple[bytes, str]) -> None:
    nodes_a, tasks_a = episode(KeyedRandom(*a), SMALL)
    nodes_b, tasks_b = episode(KeyedRandom(*b), SMALL)
    assert nodes_a != nodes_b
    assert [t.arrival for t in tasks_a] != [t.arrival for t in tasks_b]


def test_keyed_stream_is_not_the_lab_stream() -> None:
    assert episode(KeyedRandom(KEY), SMALL) != episode(random.Random(0), SMALL)


def test_seed_rewinds_the_stream() -> None:
    rng = KeyedRandom(KEY, "x")
    first = [rng.random() for _ in range(100)]
    rng.seed(123)
    assert [rng.random() for _ in range(100)] == first


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (b"short", "KeyedRandom needs a key of at least 16 bytes (128 bits), got 5"),
        ("0" * 32, "KeyedRandom needs a key of at least 16 bytes (128 bits), got str"),
    ],
    ids=["short", "not-bytes"],
)
def test_key_must_have_128_bits(key: bytes, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        KeyedRandom(key)
    assert str(exc.value) == message


def test_state_cannot_leave_or_enter() -> None:
    rng = KeyedRandom(KEY)
    with pytest.raises(TypeError, match="cannot be exported"):
        rng.getstate()
    with pytest.raises(TypeError, match="cannot be imported"):
        rng.setstate(random.Random(0).getstate())


@pytest.mark.parametrize("k", [1, 7, 8, 9, 31, 53, 64, 100], ids=lambda k: f"bits{k}")
def test_getrandbits_range(k: int) -> None:
    rng = KeyedRandom(KEY, str(k))
    values = [rng.getrandbits(k) for _ in range(2000)]
    assert all(0 <= v < 2**k for v in values)
    assert max(values).bit_length() == k  # the top bit is reachable


def test_random_is_uniform() -> None:
    rng = KeyedRandom(KEY, "uniform")
    values = [rng.random() for _ in range(20000)]
    assert min(values) >= 0 and max(values) < 1
    assert stats.kstest(values, "uniform").pvalue > ALPHA


def test_randbelow_is_uniform() -> None:
    rng = KeyedRandom(KEY, "randrange")
    counts = Counter(rng.randrange(7) for _ in range(14000))
    assert stats.chisquare([counts[i] for i in range(7)]).pvalue > ALPHA


# ------------------------------------------------------------------------------------------------ like the lab


def pooled(make_rng: list[random.Random], scenario: Scenario) -> dict[str, np.ndarray]:
    """Node parameters, inter-arrival gaps, cycles and image popularity ranks pooled over episodes."""
    out: dict[str, list[float]] = {"bandwidth": [], "freq": [], "storage": [], "gap": [], "cycles": [], "rank": []}
    for rng in make_rng:
        nodes, tasks = draw_episode(scenario, rng)
        out["bandwidth"] += [n.bandwidth for n in nodes]
        out["freq"] += [n.freq for n in nodes]
        out["storage"] += [n.storage for n in nodes]
        arrivals = [0.0] + [t.arrival for t in tasks]
        out["gap"] += list(np.diff(arrivals))
        out["cycles"] += [t.cycles for t in tasks]
        # Rank of each task's image by its frequency in the episode: the Zipf profile, whatever the shuffle.
        by_count = [image for image, _ in Counter(t.image for t in tasks).most_common()]
        position = {image: r for r, image in enumerate(by_count)}
        out["rank"] += [min(position[t.image], 20) for t in tasks]
    return {k: np.asarray(v) for k, v in out.items()}


SCENARIO = Scenario(n_nodes=20, n_tasks=1000)
N_EPISODES = 40


@pytest.fixture(scope="module")
def lab() -> dict[str, np.ndarray]:
    return pooled([random.Random(seed) for seed in range(N_EPISODES)], SCENARIO)


@pytest.fixture(scope="module")
def keyed() -> dict[str, np.ndarray]:
    return pooled([KeyedRandom(KEY, f"episode-{i}") for i in range(N_EPISODES)], SCENARIO)


@pytest.mark.parametrize("name", ["bandwidth", "freq", "storage", "gap", "cycles"])
def test_continuous_draws_match_the_lab(lab: dict[str, np.ndarray], keyed: dict[str, np.ndarray], name: str) -> None:
    assert stats.ks_2samp(lab[name], keyed[name]).pvalue > ALPHA


def test_image_popularity_matches_the_lab(lab: dict[str, np.ndarray], keyed: dict[str, np.ndarray]) -> None:
    table = np.array([np.bincount(lab["rank"], minlength=21), np.bincount(keyed["rank"], minlength=21)])
    assert stats.chi2_contingency(table).pvalue > ALPHA


def test_the_statistical_tests_can_fail(keyed: dict[str, np.ndarray]) -> None:
    # The same checks see a 10% change of arrival rate and a Zipf exponent of 1.2 instead of 1.
    faster = pooled(
        [random.Random(seed) for seed in range(N_EPISODES)], Scenario(n_nodes=20, n_tasks=1000, arrival_rate=0.33)
    )
    assert stats.ks_2samp(faster["gap"], keyed["gap"]).pvalue < ALPHA
    steeper = pooled(
        [random.Random(seed) for seed in range(N_EPISODES)], Scenario(n_nodes=20, n_tasks=1000, zipf_s=1.2)
    )
    table = np.array([np.bincount(steeper["rank"], minlength=21), np.bincount(keyed["rank"], minlength=21)])
    assert stats.chi2_contingency(table).pvalue < ALPHA


def test_moments_match_the_scenario(keyed: dict[str, np.ndarray]) -> None:
    assert keyed["gap"].mean() == pytest.approx(1 / SCENARIO.arrival_rate, rel=0.02)
    assert keyed["cycles"].mean() == pytest.approx(50.0, rel=0.01)
    assert keyed["bandwidth"].min() >= 60 / 8 and keyed["bandwidth"].max() <= 90 / 8
    assert keyed["storage"].min() >= 5 * 1024 and keyed["storage"].max() <= 15 * 1024
