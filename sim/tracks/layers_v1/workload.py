"""Drawing an episode: node parameters and the task stream, from one random generator.

The draw order is the lab's ``ClusterEnv.reset``: every node's bandwidth, frequency and storage in turn, a shuffle
of the image popularity ranks, then per task an exponential inter-arrival gap, a Zipf-weighted image and a uniform
cycle count. With ``random.Random(seed)`` this reproduces the lab's episodes exactly; hidden episodes pass a
``KeyedRandom`` instead and keep the same distributions.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from layersched.sim.tracks.layers_v1.scenario import Scenario

CLOUD_STORAGE_MB = float("inf")


@dataclass(frozen=True)
class NodeSpec:
    """Fixed parameters of one node: MB/s, GHz, MB, container slots, and whether it is the cloud node."""

    bandwidth: float
    freq: float
    storage: float
    slots: int
    is_cloud: bool = False


@dataclass(frozen=True)
class Task:
    """One container request: arrival time (s), image index into the catalog, and work (G cycles)."""

    arrival: float
    image: int
    cycles: float


def draw_nodes(scenario: Scenario, rng: random.Random) -> list[NodeSpec]:
    ranges = scenario.nodes
    specs = [
        NodeSpec(
            bandwidth=rng.uniform(*ranges.bandwidth_mbps) / 8,  # Mbps -> MB/s
            freq=rng.uniform(*ranges.freq_ghz),
            storage=rng.uniform(*ranges.storage_gb) * 1024,  # GB -> MB
            slots=scenario.slots,
        )
        for _ in range(scenario.n_nodes)
    ]
    if scenario.cloud is not None:
        # No random draws for the cloud node, so the edge nodes and tasks stay the lab's.
        specs.append(
            NodeSpec(
                bandwidth=scenario.cloud.bandwidth_mbps / 8,
                freq=scenario.cloud.freq_ghz,
                storage=CLOUD_STORAGE_MB,
                slots=1,
                is_cloud=True,
            )
        )
    return specs


def draw_tasks(scenario: Scenario, rng: random.Random) -> list[Task]:
    order = list(range(len(scenario.catalog.images)))
    rng.shuffle(order)
    if scenario.zipf_s == 1.0:
        weights = [1 / (rank + 1) for rank in range(len(order))]
    else:
        weights = [1 / (rank + 1) ** scenario.zipf_s for rank in range(len(order))]
    # random.choices would rebuild these cumulative weights per call; the floats and the draws are the same.
    cum_weights = list(itertools.accumulate(weights))
    tasks = []
    t = 0.0
    for _ in range(scenario.n_tasks):
        t += rng.expovariate(scenario.arrival_rate)
        image = rng.choices(order, cum_weights=cum_weights)[0]
        tasks.append(Task(t, image, rng.uniform(*scenario.cycles_g)))
    return tasks


def draw_episode(scenario: Scenario, rng: random.Random) -> tuple[list[NodeSpec], list[Task]]:
    """Nodes first, then tasks, from the same generator (the lab's order)."""
    nodes = draw_nodes(scenario, rng)
    return nodes, draw_tasks(scenario, rng)
