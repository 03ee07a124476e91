"""The simulator reproduces the lab's published numbers (lab text, steps 2 and 4)."""

from __future__ import annotations

import statistics

import pytest

from layersched.sim.tracks.layers_v1.baselines import BASELINES
from layersched.sim.tracks.layers_v1.catalog import load_catalog
from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.episode import run_lab_baseline
from layersched.sim.tracks.layers_v1.scenario import Scenario

LAB_TABLE = {
    "Random": (243.2, 35.2),
    "LeastLoaded": (163.4, 23.2),
    "Kube": (69.8, 5.0),
    "Dep": (551.2, 173.2),
    "LRS": (75.1, 6.6),
    "Greedy": (60.2, 3.4),
}

# (nodes, rate) -> {baseline: mean over seeds 0-4}, from the lab's sensitivity analysis.
LAB_SENSITIVITY = {
    (5, 0.3): {"Greedy": 121.0, "Kube": 255.0, "LRS": 213.1},
    (20, 0.3): {"Greedy": 56.8, "Kube": 64.1, "LRS": 64.5},
    (10, 0.5): {"Greedy": 78.4},
}


def _means(scenario: Scenario, name: str) -> list[float]:
    env = ClusterEnv(scenario)
    return [run_lab_baseline(env, BASELINES[name], seed) for seed in range(5)]


def test_lab_catalog_matches_make_images_summary() -> None:
    catalog = load_catalog("lab")
    sizes = [im.size_mb for im in catalog.images]
    assert len(sizes) == 60
    assert round(sum(sizes) / len(sizes)) == 868
    assert round(max(sizes)) == 1536
    # Digests and the first image's stack, as make_images.py prints them for random.Random(0).
    first = catalog.images[0]
    assert [la.digest for la in first.layers][:2] == ["base-6baa9455", "rt-5487ce1e"]
    assert [la.size_mb for la in first.layers][:2] == [106.0, 75.8]


@pytest.mark.parametrize("name", list(LAB_TABLE), ids=list(LAB_TABLE))
def test_baseline_table(name: str) -> None:
    results = _means(Scenario(), name)
    mean, std = LAB_TABLE[name]
    assert round(statistics.fmean(results), 1) == mean
    assert round(statistics.pstdev(results), 1) == std


@pytest.mark.parametrize(
    ("nodes", "rate", "name"),
    [(n, r, name) for (n, r), row in LAB_SENSITIVITY.items() for name in row],
    ids=[f"{n}nodes-rate{r}-{name}" for (n, r), row in LAB_SENSITIVITY.items() for name in row],
)
def test_sensitivity(nodes: int, rate: float, name: str) -> None:
    results = _means(Scenario(n_nodes=nodes, arrival_rate=rate), name)
    assert round(statistics.fmean(results), 1) == LAB_SENSITIVITY[(nodes, rate)][name]
