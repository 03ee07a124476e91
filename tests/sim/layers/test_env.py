"""The lab's ClusterEnv API, the vectorised paths against the per-node ones, determinism and bad input."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from layersched.sim.errors import CatalogError, PolicyError, ScenarioError
from layersched.sim.tracks.layers_v1.baselines import BASELINES, get_baseline
from layersched.sim.tracks.layers_v1.catalog import load_catalog, parse_catalog
from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.episode import check_action, run_episode
from layersched.sim.tracks.layers_v1.scenario import CloudNode, NodeRanges, Scenario


def lab_style_policy(env, task, rng):  # type: ignore[no-untyped-def]
    """Written against the lab's names only, the way a student wrote policies during the lab."""
    best, best_score = 0, float("inf")
    feasible = env.mask(task)
    for n in range(env.n_nodes):
        node = env.nodes[n]
        assert {"bandwidth", "freq", "storage", "slots", "layers", "in_use", "download_free"} <= set(vars(node))
        e = env.estimate(n, task)
        cached = sum(env.size[d] for d in node.layers if d in {la["digest"] for la in env.images[task.image]["layers"]})
        score = e["total"] - 1e-6 * cached / max(env.image_mb[task.image], 1)
        if feasible[n] and score < best_score:
            best, best_score = n, score
    assert env.observe(task).shape == (env.n_nodes, env.n_features)
    assert (task.arrival, task.image, task.cycles) == (task.arrival, task.image, task.cycles)
    return best


def test_lab_policy_runs_unchanged() -> None:
    env = ClusterEnv(Scenario(n_tasks=60))
    result = run_episode(env, lab_style_policy, 3, random.Random(3))
    assert len(result.actions) == 60
    assert result.metrics.mean_completion > 0


@pytest.mark.parametrize("cloud", [False, True], ids=["edge-only", "with-cloud"])
def test_estimate_all_equals_per_node_estimate(cloud: bool) -> None:
    env = ClusterEnv(Scenario(n_tasks=300, arrival_rate=0.5, cloud=CloudNode() if cloud else None))
    task = env.reset(11)
    rng = random.Random(0)
    done = False
    while not done:
        vector = env.estimate_all(task)
        for n in range(env.n_nodes):
            e = env.estimate(n, task)
            assert vector.total[n] == e["total"]
            assert vector.missing_mb[n] == e["missing_mb"]
            assert vector.download[n] == e["download"]
            assert vector.wait[n] == e["wait"]
        task, _, done = env.step(BASELINES["Greedy"](env, task, rng))


def test_observe_matches_lab_features() -> None:
    env = ClusterEnv(Scenario(n_tasks=200))
    task = env.reset(5)
    rng = random.Random(5)
    for _ in range(150):
        task, _, _ = env.step(BASELINES["LRS"](env, task, rng))
    obs = env.observe(task)
    for n, node in enumerate(env.nodes):
        e = env.estimate(n, task)
        used = sum(env.size[d] for d in node.layers)
        expected = np.array(
            [
                e["missing_mb"] / 1000,
                e["download"] / 100,
                e["wait"] / 100,
                e["compute"] / 100,
                e["total"] / 100,
                1 - used / node.storage,
            ],
            dtype=np.float32,
        )
        np.testing.assert_array_equal(obs[n], expected)


def test_same_seeds_same_trace_and_other_seeds_differ() -> None:
    env = ClusterEnv(Scenario(n_tasks=100))
    a = run_episode(env, BASELINES["Random"], 1, random.Random(9))
    b = run_episode(env, BASELINES["Random"], 1, random.Random(9))
    other_workload = run_episode(env, BASELINES["Random"], 2, random.Random(9))
    other_policy_rng = run_episode(env, BASELINES["Random"], 1, random.Random(10))
    assert a.trace_hash == b.trace_hash and a.completions == b.completions
    # Random ignores the workload, so only the completion times change with it.
    assert a.completions != other_workload.completions
    assert a.trace_hash != other_policy_rng.trace_hash


def test_eviction_happens_when_storage_is_tight_and_never_evicts_needed_layers() -> None:
    # 1 GB nodes with ~870 MB images force eviction on almost every placement.
    scenario = Scenario(n_nodes=3, n_tasks=200, nodes=NodeRanges(storage_gb=(1.6, 1.6)))
    env = ClusterEnv(scenario)
    task = env.reset(0)
    rng = random.Random(0)
    evictions = 0
    done = False
    while not done:
        before = {n: set(node.layers) for n, node in enumerate(env.nodes)}
        action = BASELINES["Greedy"](env, task, rng)
        needed = {la["digest"] for la in env.images[task.image]["layers"]}
        task, _, done = env.step(action)
        lost = before[action] - set(env.nodes[action].layers)
        assert not (lost & needed)
        evictions += len(lost)
    assert evictions > 0


def test_cloud_node_never_caches_and_takes_load() -> None:
    env = ClusterEnv(Scenario(n_nodes=3, n_tasks=300, arrival_rate=0.8, cloud=CloudNode()))
    result = run_episode(env, BASELINES["Greedy"], 0, random.Random(0))
    cloud = env.nodes[-1]
    assert cloud.is_cloud and cloud.layers == {} and cloud.download_free == 0.0
    assert 0 < result.metrics.cloud_share < 1


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (10, "step 0: policy returned node 10, outside 0..9"),
        (-1, "step 0: policy returned node -1, outside 0..9"),
        (1.0, "step 0: policy returned 1.0 of type float, expected an int node index"),
        (None, "step 0: policy returned None of type NoneType, expected an int node index"),
        (True, "step 0: policy returned True of type bool, expected an int node index"),
    ],
    ids=["too-large", "negative", "float", "none", "bool"],
)
def test_check_action_rejects(action: object, message: str) -> None:
    env = ClusterEnv(Scenario(n_tasks=5))
    task = env.reset(0)
    with pytest.raises(PolicyError) as info:
        check_action(env, task, action, 0)
    assert str(info.value) == message
    assert info.value.value is action


def test_check_action_rejects_masked_node() -> None:
    scenario = Scenario(n_nodes=4, n_tasks=50, nodes=NodeRanges(storage_gb=(0.9, 1.6)))
    env = ClusterEnv(scenario)
    task = env.reset(0)
    while env.mask(task).all():
        task, _, _ = env.step(int(np.flatnonzero(env.mask(task))[0]))
    bad = int(np.flatnonzero(~env.mask(task))[0])
    with pytest.raises(PolicyError, match=rf"policy returned node {bad}, which cannot store image {task.image}"):
        check_action(env, task, bad, env.k)


def test_numpy_integer_actions_are_accepted() -> None:
    env = ClusterEnv(Scenario(n_tasks=5))
    task = env.reset(0)
    assert check_action(env, task, np.int64(3), 0) == 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_nodes": 0}, "n_nodes must be a positive integer, got 0"),
        ({"n_tasks": -5}, "n_tasks must be a positive integer, got -5"),
        ({"slots": 0}, "slots must be a positive integer, got 0"),
        ({"arrival_rate": 0.0}, "arrival_rate must be a positive finite number, got 0.0"),
        (
            {"nodes": NodeRanges(bandwidth_mbps=(90.0, 60.0))},
            "nodes.bandwidth_mbps must be a range 0 < lo <= hi, got (90.0, 60.0)",
        ),
        (
            {"nodes": NodeRanges(storage_gb=(0.5, 1.0))},
            "image 'img09' of catalog 'lab' needs 1434.0 MB but no node can hold more than 1024 MB "
            "(nodes.storage_gb=(0.5, 1.0))",
        ),
    ],
    ids=["zero-nodes", "negative-tasks", "zero-slots", "zero-rate", "inverted-range", "image-too-large"],
)
def test_impossible_scenarios_are_rejected(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        Scenario(**kwargs)  # type: ignore[arg-type]
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, "catalog 'x': expected a non-empty JSON list of images, got {}"),
        ([{"name": "a", "layers": []}], "catalog 'x': image 'a' has no layers"),
        (
            [{"name": "a", "layers": [{"digest": "d", "size_mb": -1}]}],
            "catalog 'x': image 'a' layer #0: 'size_mb' must be between 0 and 65536, got -1",
        ),
        (
            [
                {"name": "a", "layers": [{"digest": "d", "size_mb": 1}]},
                {"name": "b", "layers": [{"digest": "d", "size_mb": 2}]},
            ],
            "catalog 'x': layer 'd' has two sizes, 1.0 MB and 2.0 MB (second in image 'b')",
        ),
    ],
    ids=["not-a-list", "empty-image", "negative-size", "conflicting-sizes"],
)
def test_malformed_catalogs(raw: object, message: str) -> None:
    with pytest.raises(CatalogError) as info:
        parse_catalog(raw, name="x")
    assert str(info.value) == message


def test_unknown_and_unreadable_catalogs(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="unknown catalog 'nope'"):
        load_catalog("nope")
    bad = tmp_path / "bad.json"
    bad.write_text("[{", encoding="utf-8")
    with pytest.raises(CatalogError, match=r"not valid JSON"):
        load_catalog(bad)
    good = tmp_path / "good.json"
    good.write_text(json.dumps([{"name": "a", "layers": [{"digest": "d", "size_mb": 10}]}]), encoding="utf-8")
    assert load_catalog(good).images[0].size_mb == 10


def test_real_catalogs_run() -> None:
    for name in ("official-2023-01", "hub-top70-2023-07"):
        env = ClusterEnv(Scenario(catalog=load_catalog(name), n_tasks=100))
        result = run_episode(env, get_baseline("Greedy"), 0, random.Random(0))
        assert result.metrics.mean_completion > 0


def test_scenario_hash_identifies_content() -> None:
    assert Scenario().content_hash == Scenario().content_hash
    assert Scenario().content_hash != Scenario(arrival_rate=0.5).content_hash
    assert Scenario().content_hash != Scenario(catalog=load_catalog("official-2023-01")).content_hash
    assert hash(Scenario()) == hash(Scenario())


def test_unknown_baseline_name() -> None:
    with pytest.raises(KeyError, match="unknown baseline 'Smart'"):
        get_baseline("Smart")
