"""ClusterEnv against a plain transcription of the lab text's model, state by state, beyond the lab's own scenario.

The conformance tests pin the lab's published numbers; these follow every placement instead (estimates, features,
completion times and the whole node state, bit for bit) on scenarios that reach the model's corners: evictions on
small nodes, a loaded cluster, real catalogs with zero-byte layers, and actions no baseline would take.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from layersched.sim.tracks.layers_v1.baselines import BASELINES
from layersched.sim.tracks.layers_v1.catalog import load_catalog
from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.scenario import NodeRanges, Scenario
from layersched.sim.tracks.layers_v1.workload import Task


class LabModel:
    """The lab's ``ClusterEnv`` estimate/observe/step, line by line, on nodes and tasks drawn by ``ClusterEnv``."""

    def __init__(self, images: list[dict[str, Any]], env: ClusterEnv) -> None:
        self.images = images
        self.size = {la["digest"]: la["size_mb"] for im in images for la in im["layers"]}
        self.nodes = [
            {
                "bandwidth": nd.bandwidth,
                "freq": nd.freq,
                "storage": nd.storage,
                "slots": [0.0] * len(nd.slots),
                "layers": {},
                "in_use": {},
                "download_free": 0.0,
            }
            for nd in env.nodes
        ]

    def estimate(self, n: int, task: Task) -> dict[str, float]:
        node, now = self.nodes[n], task.arrival
        t_free = max(now, node["download_free"])
        done, missing = now, 0.0
        for la in self.images[task.image]["layers"]:
            if la["digest"] in node["layers"]:
                done = max(done, node["layers"][la["digest"]])
            else:
                missing += la["size_mb"]
                t_free += la["size_mb"] / node["bandwidth"]
                done = max(done, t_free)
        compute = task.cycles / node["freq"]
        start = max(done, min(node["slots"]))
        return {
            "missing_mb": missing,
            "download": done - now,
            "wait": start - done,
            "compute": compute,
            "total": start + compute - now,
        }

    def observe(self, task: Task) -> np.ndarray:
        rows = []
        for n, node in enumerate(self.nodes):
            e = self.estimate(n, task)
            used = sum(self.size[d] for d in node["layers"])
            rows.append(
                [
                    e["missing_mb"] / 1000,
                    e["download"] / 100,
                    e["wait"] / 100,
                    e["compute"] / 100,
                    e["total"] / 100,
                    1 - used / node["storage"],
                ]
            )
        return np.array(rows, dtype=np.float32)

    def step(self, task: Task, n: int) -> float:
        node = self.nodes[n]
        e = self.estimate(n, task)
        layers = self.images[task.image]["layers"]
        free = node["storage"] - sum(self.size[d] for d in node["layers"])
        need = {la["digest"] for la in layers}
        victims = sorted(
            (
                d
                for d in node["layers"]
                if d not in need and node["layers"][d] <= task.arrival and node["in_use"].get(d, 0) <= task.arrival
            ),
            key=lambda d: node["in_use"].get(d, 0),
        )
        for d in victims:
            if free >= e["missing_mb"]:
                break
            free += self.size[d]
            del node["layers"][d]
            node["in_use"].pop(d, None)
        t_free = max(task.arrival, node["download_free"])
        for la in layers:
            if la["digest"] not in node["layers"]:
                t_free += la["size_mb"] / node["bandwidth"]
                node["layers"][la["digest"]] = t_free
        if e["missing_mb"] > 0:
            node["download_free"] = t_free
        i = int(np.argmin(node["slots"]))
        finish = task.arrival + e["total"]
        node["slots"][i] = finish
        for la in layers:
            node["in_use"][la["digest"]] = max(node["in_use"].get(la["digest"], 0), finish)
        return e["total"]


SCENARIOS = {
    "lab": Scenario(n_tasks=300),
    "small-nodes-evict": Scenario(n_nodes=4, n_tasks=300, nodes=NodeRanges(storage_gb=(1.6, 3.0))),
    "loaded": Scenario(n_nodes=5, n_tasks=300, arrival_rate=0.8),
    "hub-zero-byte-layers": Scenario(catalog=load_catalog("hub-top70-2023-07"), n_nodes=6, n_tasks=300),
    "official-tight": Scenario(
        catalog=load_catalog("official-2023-01"), n_nodes=3, n_tasks=300, nodes=NodeRanges(storage_gb=(1.0, 2.0))
    ),
}


def _random_feasible(env: ClusterEnv, task: Task, rng: random.Random) -> int:
    """Any allowed node: states no baseline reaches (cold nodes chosen while warm ones wait)."""
    return rng.choice(env.feasible_nodes(task) or list(range(env.n_nodes)))


@pytest.mark.parametrize("policy", ["Greedy", "random"], ids=["greedy", "random"])
@pytest.mark.parametrize("scenario", list(SCENARIOS.values()), ids=list(SCENARIOS))
def test_every_placement_matches_the_lab_model(scenario: Scenario, policy: str) -> None:
    env = ClusterEnv(scenario)
    task: Task | None = env.reset(7)
    lab = LabModel(env.images, env)
    choose = BASELINES["Greedy"] if policy == "Greedy" else _random_feasible
    rng = random.Random(7)
    evictions = 0
    while task is not None:
        for n in range(env.n_nodes):
            assert env.estimate(n, task) == lab.estimate(n, task), (env.k, n)
        assert env.totals(task) == [lab.estimate(n, task)["total"] for n in range(env.n_nodes)], env.k
        assert np.array_equal(env.observe(task), lab.observe(task)), env.k
        action = choose(env, task, rng)
        before = set(lab.nodes[action]["layers"])
        expected = lab.step(task, action)
        evictions += len(before - set(lab.nodes[action]["layers"]))
        task, reward, _ = env.step(action)
        assert env.completion[-1] == expected and reward == -expected / 100
        ours, theirs = env.nodes[action], lab.nodes[action]
        assert list(ours.layers.items()) == list(theirs["layers"].items()), env.k
        assert list(ours.in_use.items()) == list(theirs["in_use"].items()), env.k
        assert (ours.slots, ours.download_free) == (theirs["slots"], theirs["download_free"]), env.k
    if scenario.nodes.storage_gb[1] <= 3.0:
        assert evictions > 0  # the scenario meant to exercise eviction did


def test_observe_returns_a_fresh_writable_float32_array() -> None:
    env = ClusterEnv(Scenario(n_tasks=20))
    task = env.reset(0)
    first = env.observe(task)
    assert first.dtype == np.float32 and first.shape == (env.n_nodes, env.n_features)
    assert first.flags.writeable and first.flags.c_contiguous
    first[:] = -1.0
    assert np.array_equal(env.observe(task), LabModel(env.images, env).observe(task))
