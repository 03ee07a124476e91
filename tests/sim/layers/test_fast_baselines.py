"""The scoring baselines (``baselines.py``) take the reference's actions (``reference_baselines.py``), draw for draw.

Both run side by side on twin environments, on scenarios that reach the corners of the model: evictions on small
nodes, a loaded cluster, a cloud node, real catalogs with zero-byte images, and nodes too small for some images.
Each baseline is checked on its own trajectory, and on a random trajectory that no baseline would take (every
baseline's choice compared at every state, with twin generators).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from layersched.sim.tracks.layers_v1.baselines import BASELINES, _pick
from layersched.sim.tracks.layers_v1.catalog import load_catalog
from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.reference_baselines import REFERENCE_BASELINES
from layersched.sim.tracks.layers_v1.reference_baselines import _pick as reference_pick
from layersched.sim.tracks.layers_v1.scenario import CloudNode, NodeRanges, Scenario

SCENARIOS = {
    "lab": Scenario(),
    "small-nodes-evict": Scenario(n_nodes=4, n_tasks=300, nodes=NodeRanges(storage_gb=(1.6, 3.0))),
    "loaded": Scenario(n_nodes=5, n_tasks=300, arrival_rate=0.8),
    "cloud": Scenario(n_nodes=5, n_tasks=300, cloud=CloudNode()),
    "hub-zero-byte-layers": Scenario(catalog=load_catalog("hub-top70-2023-07"), n_nodes=6, n_tasks=300),
    "official-tight": Scenario(
        catalog=load_catalog("official-2023-01"), n_nodes=3, n_tasks=300, nodes=NodeRanges(storage_gb=(1.0, 2.0))
    ),
    # Nodes of 0.5-1.6 GB and uniform popularity: the lab's largest images fit on some nodes only.
    "too-small-nodes": Scenario(n_nodes=6, n_tasks=300, nodes=NodeRanges(storage_gb=(0.5, 1.6)), zipf_s=0.0),
    "twenty-nodes": Scenario(n_nodes=20, n_tasks=300, arrival_rate=0.5, slots=2),
}


def _some_node_is_too_small(scenario: Scenario, seed: int) -> bool:
    env = ClusterEnv(scenario)
    env.reset(seed)
    return any(not env.mask(task).all() for task in env.tasks)


def test_the_scenarios_reach_the_corners() -> None:
    """The scenarios do reach what they are named for (so the comparisons below test it)."""
    assert _some_node_is_too_small(SCENARIOS["too-small-nodes"], 0)
    env = ClusterEnv(SCENARIOS["hub-zero-byte-layers"])
    assert 0.0 in env.image_mb


@pytest.mark.parametrize("name", list(BASELINES), ids=list(BASELINES))
@pytest.mark.parametrize("scenario", list(SCENARIOS.values()), ids=list(SCENARIOS))
def test_each_baseline_takes_the_reference_actions(scenario: Scenario, name: str) -> None:
    fast_env, ref_env = ClusterEnv(scenario), ClusterEnv(scenario)
    fast, reference = BASELINES[name], REFERENCE_BASELINES[name]
    for seed in (0, 1, 7):
        fast_task, ref_task = fast_env.reset(seed), ref_env.reset(seed)
        fast_rng, ref_rng = random.Random(seed), random.Random(seed)
        for step in range(scenario.n_tasks):
            action = fast(fast_env, fast_task, fast_rng)
            expected = reference(ref_env, ref_task, ref_rng)
            assert action == expected, f"{name}, seed {seed}, step {step}: {action} != reference {expected}"
            fast_task, _, _ = fast_env.step(action)  # type: ignore[assignment]
            ref_task, _, _ = ref_env.step(expected)  # type: ignore[assignment]
        assert fast_rng.getstate() == ref_rng.getstate()
        assert fast_env.completion == ref_env.completion


@pytest.mark.parametrize("scenario", list(SCENARIOS.values()), ids=list(SCENARIOS))
def test_every_baseline_agrees_on_states_no_baseline_reaches(scenario: Scenario) -> None:
    fast_env, ref_env = ClusterEnv(scenario), ClusterEnv(scenario)
    driver = random.Random(3)
    fast_task, ref_task = fast_env.reset(5), ref_env.reset(5)
    for step in range(scenario.n_tasks):
        for name, fast in BASELINES.items():
            seed = driver.getrandbits(32)
            action = fast(fast_env, fast_task, random.Random(seed))
            expected = REFERENCE_BASELINES[name](ref_env, ref_task, random.Random(seed))
            assert action == expected, f"{name}, step {step}: {action} != reference {expected}"
        feasible = fast_env.feasible_nodes(fast_task)
        action = feasible[driver.randrange(len(feasible))]
        fast_task, _, _ = fast_env.step(action)  # type: ignore[assignment]
        ref_task, _, _ = ref_env.step(action)  # type: ignore[assignment]


@pytest.mark.parametrize("n_nodes", [1, 2, 5, 10], ids=lambda n: f"{n}-nodes")
def test_pick_is_the_labs_pick(n_nodes: int) -> None:
    """Ties, partial masks and an empty mask (every node masked: all tie) pick the lab's node with the lab's draw."""
    draw = random.Random(n_nodes)
    for case in range(500):
        # Few distinct values, so ties are common; ints and floats, as the baselines' scores are.
        scores: list[float] = [draw.choice([0, 1, -2, 0.5, 0.25, -1e-3]) for _ in range(n_nodes)]
        mask = np.array([draw.random() < 0.7 for _ in range(n_nodes)])
        fast_rng, ref_rng = random.Random(case), random.Random(case)
        got = _pick(scores, np.flatnonzero(mask).tolist(), fast_rng)
        assert got == reference_pick(np.array(scores), mask, ref_rng), (scores, mask)
        assert fast_rng.getstate() == ref_rng.getstate()
