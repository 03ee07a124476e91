"""The lab's six heuristic baselines written as the lab writes them: the definition ``baselines.py`` is checked against.

Each scores every node in plain Python and picks the best feasible one with numpy, breaking ties uniformly with ``rng``
(one draw per decision, even when there is no tie, exactly as the lab's ``_pick`` does). They are 60-100 us a decision;
nothing scores with them. ``layersched.sim.tracks.layers_v1.baselines`` holds the implementation that scores, and
``tests/sim/layers/test_fast_baselines.py`` proves it takes the same actions, draw for draw.
"""

from __future__ import annotations

import random

import numpy as np
import numpy.typing as npt

from layersched.sim.tracks.layers_v1.baselines import BASELINES, Policy
from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.workload import Task


def _pick(scores: npt.ArrayLike, mask: npt.NDArray[np.bool_], rng: random.Random) -> int:
    """Highest-scoring feasible node; ties broken uniformly at random."""
    masked = np.where(mask, scores, -np.inf)
    best = np.flatnonzero(masked == masked.max())
    return int(rng.choice(list(best)))


def _idle_share(slots: list[float], now: float) -> float:
    return sum(1 for s in slots if s <= now) / len(slots)


def _cached_mb(env: ClusterEnv, task: Task, node_layers: dict[str, float]) -> float:
    return float(sum(la["size_mb"] for la in env.images[task.image]["layers"] if la["digest"] in node_layers))


def random_policy(env: ClusterEnv, task: Task, rng: random.Random) -> int:
    """Any feasible node, uniformly."""
    return _pick(np.zeros(env.n_nodes), env.mask(task), rng)


def least_loaded(env: ClusterEnv, task: Task, rng: random.Random) -> int:
    """Fewest running containers; ignores images entirely."""
    busy = [sum(s > task.arrival for s in node.slots) for node in env.nodes]
    return _pick(-np.array(busy), env.mask(task), rng)


def kube_image(env: ClusterEnv, task: Task, rng: random.Random) -> int:
    """Image granularity, like Kubernetes' ImageLocality: whole image cached, then idleness, half each."""
    digests = [la["digest"] for la in env.images[task.image]["layers"]]
    scores = [
        0.5 * all(d in node.layers for d in digests) + 0.5 * _idle_share(node.slots, task.arrival) for node in env.nodes
    ]
    return _pick(np.array(scores), env.mask(task), rng)


def dep_layer(env: ClusterEnv, task: Task, rng: random.Random) -> int:
    """Layer granularity, like Dep: most cached MB wins, earliest free slot breaks near-ties."""
    scores = [_cached_mb(env, task, node.layers) - 1e-3 * min(node.slots) for node in env.nodes]
    return _pick(np.array(scores), env.mask(task), rng)


def lrs_like(env: ClusterEnv, task: Task, rng: random.Random) -> int:
    """Dynamic weights, like LRScheduler: sharing matters when a node is idle, balance when it is busy."""
    scores = []
    image_mb = env.image_mb[task.image]
    for node in env.nodes:
        # A zero-byte image (hello-world rounds to 0.00 MB in the real catalogs) is fully present everywhere; the
        # lab's formula divides by zero there, which its synthetic catalog never reaches.
        shared = _cached_mb(env, task, node.layers) / image_mb if image_mb > 0 else 1.0
        idle = _idle_share(node.slots, task.arrival)
        weight = 0.7 if idle >= 0.5 else 0.2
        scores.append(weight * shared + (1 - weight) * idle)
    return _pick(np.array(scores), env.mask(task), rng)


def greedy_estimate(env: ClusterEnv, task: Task, rng: random.Random) -> int:
    """Myopic: the node with the smallest estimated completion time for this task alone."""
    return _pick(-np.array([env.estimate(n, task)["total"] for n in range(env.n_nodes)]), env.mask(task), rng)


# Each name's reference is the function of the same name as the scoring one, so the two cannot be paired wrongly.
REFERENCE_BASELINES: dict[str, Policy] = {name: globals()[policy.__name__] for name, policy in BASELINES.items()}
