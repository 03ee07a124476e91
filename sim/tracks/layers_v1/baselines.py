"""The lab's six heuristic baselines, as policies with the student contract ``policy(env, task, rng) -> int``.

Each scores every node and picks the best feasible one, breaking ties uniformly with ``rng`` (one draw per
decision, even when there is no tie, exactly as the lab's ``_pick`` does, so random streams stay aligned).

These are the implementations that score (the leaderboard's reference rows, ``python -m layersched.sim``). Every
score is the lab's expression on the lab's values, so scores, ties and draws are the lab's; what changes is the work
done per decision (the lab's way of writing them, kept in ``reference_baselines.py``, costs 60-100 us a decision):

* the best feasible node is found on Python lists (``_pick``): numpy costs about 1 us per call on arrays of ten;
* whether a node holds the whole image is one set comparison of the image's digests with the node's layers;
* the MB a node holds of an image are read from the simulator (``_held_mb``), which sums them beside each per-node
  plan, only when that node's layers change, in the image's layer order as the lab sums them (Kube does without
  plans: computing them for every node cost more than the comparison, measured);
* a node whose earliest free slot (kept by the simulator) is after ``now`` has no idle slot: no need to count.

``tests/sim/layers/test_fast_baselines.py`` checks that they take the reference's actions, step for step, on scenarios
that reach the corners (evictions, a cloud node, zero-byte images, nodes too small for some images).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.workload import Task

Policy = Callable[[Any, Task, random.Random], int]

_SLOT = 1  # NodeState's earliest free slot (layersched.sim.tracks.layers_v1.env)


# The baselines read the simulator's own list of feasible nodes (env._feasible_nodes[image], what feasible_nodes()
# returns a copy of): they never modify it.


def _pick(scores: Sequence[float], feasible: list[int], rng: random.Random) -> int:
    """The lab's ``_pick`` on lists: the highest-scoring feasible node, ties broken by one ``rng.choice``."""
    if len(feasible) == len(scores):
        best = max(scores)
        if scores.count(best) == 1:
            return rng.choice([scores.index(best)])
        return rng.choice([n for n, s in enumerate(scores) if s == best])
    if not feasible:  # the lab masks every score to -inf, so every node ties
        return rng.choice(range(len(scores)))
    best = max([scores[n] for n in feasible])
    return rng.choice([n for n in feasible if scores[n] == best])


def random_policy(env: ClusterEnv, task: Task, rng: random.Random) -> int:
    """Any feasible node, uniformly."""
    feasible = env._feasible_nodes[task.image]
    return rng.choice(feasible) if feasible else rng.choice(range(env.n_nodes))


def least_loaded(env: ClusterEnv, task: Task, rng: random.Random) -> int:
    """Fewest running containers; ignores images entirely."""
    now = task.arrival
    scores = []
    for node, state in zip(env.nodes, env._state, strict=True):
        slots = node.slots
        if state[_SLOT] > now:  # the earliest free slot is later: every slot is busy
            scores.append(-len(slots))
            continue
        busy = 0
        for s in slots:
            if s > now:
                busy += 1
        scores.append(-busy)
    return _pick(scores, env._feasible_nodes[task.image], rng)


def kube_image(env: ClusterEnv, task: Task, rng: random.Random) -> int:
    """Image granularity, like Kubernetes' ImageLocality: whole image cached, then idleness, half each."""
    now = task.arrival
    digests = env._image_digests[task.image]
    scores = []
    for node, state in zip(env.nodes, env._state, strict=True):
        idle = 0
        if state[_SLOT] <= now:  # else the earliest free slot is later: no slot is idle
            for s in node.slots:
                if s <= now:
                    idle += 1
        # The lab's all(d in node.layers for d in image digests), as one set comparison in C.
        scores.append(0.5 * (node.layers.keys() >= digests) + 0.5 * (idle / len(node.slots)))
    return _pick(scores, env._feasible_nodes[task.image], rng)


def dep_layer(env: ClusterEnv, task: Task, rng: random.Random) -> int:
    """Layer granularity, like Dep: most cached MB wins, earliest free slot breaks near-ties."""
    plans = env._plans_for(task.image)
    scores = [mb - 1e-3 * plan[5][_SLOT] for plan, mb in zip(plans, env._held_mb[task.image], strict=True)]
    return _pick(scores, env._feasible_nodes[task.image], rng)


def lrs_like(env: ClusterEnv, task: Task, rng: random.Random) -> int:
    """Dynamic weights, like LRScheduler: sharing matters when a node is idle, balance when it is busy."""
    now, image_mb = task.arrival, env._image_size[task.image]
    plans = env._plans_for(task.image)
    scores = []
    for plan, mb, node in zip(plans, env._held_mb[task.image], env.nodes, strict=True):
        # A zero-byte image (hello-world rounds to 0.00 MB in the real catalogs) is fully present everywhere; the
        # lab's formula divides by zero there, which its synthetic catalog never reaches.
        shared = mb / image_mb if image_mb > 0 else 1.0
        if plan[5][_SLOT] > now:  # the earliest free slot is later: no slot idle, the score is 0.2 * shared + 0.0
            scores.append(0.2 * shared)
            continue
        idle_slots = 0
        for s in node.slots:
            if s <= now:
                idle_slots += 1
        idle = idle_slots / len(node.slots)
        weight = 0.7 if idle >= 0.5 else 0.2
        scores.append(weight * shared + (1 - weight) * idle)
    return _pick(scores, env._feasible_nodes[task.image], rng)


def greedy_estimate(env: ClusterEnv, task: Task, rng: random.Random) -> int:
    """Myopic: the node with the smallest estimated completion time for this task alone."""
    totals = env.totals(task)
    feasible = env._feasible_nodes[task.image]
    if not feasible:
        return rng.choice(range(env.n_nodes))  # the lab's _pick with every node masked: all tie
    # The lab's _pick on -totals without numpy: the same ties and the same single rng draw (rng.choice even of
    # one node). When every node is feasible, which is the common case, the list methods find the best in C.
    if len(feasible) == len(totals):
        best_total = min(totals)
        if totals.count(best_total) == 1:
            return rng.choice([totals.index(best_total)])
    else:
        best_total = min(totals[n] for n in feasible)
    best: list[int] = [n for n in feasible if totals[n] == best_total]
    return rng.choice(best)


BASELINES: dict[str, Policy] = {
    "Random": random_policy,
    "LeastLoaded": least_loaded,
    "Kube": kube_image,
    "Dep": dep_layer,
    "LRS": lrs_like,
    "Greedy": greedy_estimate,
}


def get_baseline(name: str) -> Policy:
    """A baseline policy by its lab name (``Random``, ``LeastLoaded``, ``Kube``, ``Dep``, ``LRS``, ``Greedy``)."""
    try:
        return BASELINES[name]
    except KeyError:
        raise KeyError(f"unknown baseline {name!r}; choose one of {', '.join(BASELINES)}") from None
