"""The cluster model of the lab (after LDLS, IEEE TMC 2023, section 3), written for speed.

Per node: download bandwidth (MB/s), CPU frequency (GHz), storage (MB), container slots (the times each slot
becomes free), local layers with the time their download completes, the time each layer was last in use, and one
download queue (``download_free``). Placing a task on a node:

* download: missing layers join the node's queue one after another; the task waits for the latest of its layers,
  including layers already queued for earlier tasks;
* wait: the container starts when its layers are there and a slot is free;
* compute: cycles / frequency;
* storage: before downloading, unused layers (not needed now, fully downloaded, not used by a running task) are
  evicted least recently used first until the missing bytes fit; if they cannot be made to fit the download happens
  anyway (the lab's simplification: storage is a soft constraint past the mask);
* reward: minus the completion time / 100.

The public names are the lab's ``ClusterEnv`` (``nodes``, ``images``, ``size``, ``image_mb``, ``n_nodes``,
``n_features``, ``estimate``, ``mask``, ``observe``, ``reset``, ``step``, ``completion``, ``tasks``, ``k``) so a
policy written during the lab runs unchanged. The lab's dictionaries hold the node state and decide eviction order.
Speed comes from not recomputing what has not changed: what a node lacks of an image (``_layer_plan``) only changes
when that node's layers change, and the MB a node stores only when it receives a task; both are kept per node and
refreshed in ``place``. The floating-point operations are the lab's, in the lab's order, so completion times and
tie-breaks are bit-identical to the lab's implementation (``benchmarks/bench_sim.py`` checks this).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from layersched.sim.scenario import Scenario
from layersched.sim.workload import NodeSpec, Task, draw_episode

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

ABSENT = -np.inf  # completion time stored for a layer a node does not hold


@dataclass
class Node:
    """The lab's node record. ``layers`` and ``in_use`` keep insertion order, which breaks LRU ties."""

    bandwidth: float
    freq: float
    storage: float
    slots: list[float]
    layers: dict[str, float] = field(default_factory=dict)
    in_use: dict[str, float] = field(default_factory=dict)
    download_free: float = 0.0
    is_cloud: bool = False


@dataclass(frozen=True)
class Estimate:
    """Vectorised estimate for every node: arrays of shape (n_nodes,)."""

    missing_mb: FloatArray
    download: FloatArray
    wait: FloatArray
    compute: FloatArray
    total: FloatArray


class ClusterEnv:
    """One simulated cluster. ``reset(seed)`` draws an episode; ``step(node)`` places the current task."""

    n_features = 6

    def __init__(self, scenario: Scenario | None = None) -> None:
        self.scenario = scenario if scenario is not None else Scenario()
        catalog = self.scenario.catalog
        # The lab's view of the catalog, as plain dicts, for policies that index env.images[i]["layers"].
        self.images: list[dict[str, Any]] = catalog.to_json()
        self.size: dict[str, float] = {la.digest: la.size_mb for im in catalog.images for la in im.layers}
        self.image_mb: list[float] = [im.size_mb for im in catalog.images]
        self.n_tasks = self.scenario.n_tasks
        self.rate = self.scenario.arrival_rate
        self.n_slots = self.scenario.slots
        self._image_layers = [tuple((la.digest, la.size_mb) for la in im.layers) for im in catalog.images]
        self._image_digests = [frozenset(d for d, _ in layers) for layers in self._image_layers]
        users: dict[str, list[int]] = {}
        for image, digests in enumerate(self._image_digests):
            for digest in digests:
                users.setdefault(digest, []).append(image)
        # layer -> the images that contain it: a node gaining or losing a layer changes only their plans.
        self._images_with_layer = {digest: tuple(images) for digest, images in users.items()}
        self.nodes: list[Node] = []
        self.tasks: list[Task] = []
        self.completion: list[float] = []
        self.k = 0

    # ------------------------------------------------------------------ episode life cycle

    def reset(self, seed: int | random.Random) -> Task:
        """Draw nodes and tasks from ``random.Random(seed)`` (the lab) or from the given generator."""
        rng = seed if isinstance(seed, random.Random) else random.Random(seed)
        specs, tasks = draw_episode(self.scenario, rng)
        self.start(specs)
        self.tasks = tasks
        return tasks[0]

    def start(self, specs: list[NodeSpec]) -> None:
        """Begin an episode on the given nodes with no tasks yet (the sandbox replica starts here)."""
        self.nodes = [
            Node(bandwidth=s.bandwidth, freq=s.freq, storage=s.storage, slots=[0.0] * s.slots, is_cloud=s.is_cloud)
            for s in specs
        ]
        self.n_nodes = len(specs)
        # Per-node mirrors of the lab's state, as plain lists: indexing them is cheaper than attribute lookups.
        self._download_free_at = [0.0] * self.n_nodes
        self._slot_min = [0.0] * self.n_nodes
        self._freq_of = [s.freq for s in specs]
        self._storage_of = [s.storage for s in specs]
        self._used = [0.0] * self.n_nodes  # MB of cached layers, summed in the lab's order after every change
        self._plans: list[dict[int, tuple[float, tuple[float, ...], float]]] = [{} for _ in specs]
        self._feasible = [np.array([mb <= s.storage for s in specs]) for mb in self.image_mb]
        self._feasible_nodes = [np.flatnonzero(mask).tolist() for mask in self._feasible]
        self.tasks = []
        self.completion = []
        self.k = 0

    def step(self, n: int) -> tuple[Task | None, float, bool]:
        """Place the current task on node ``n``; return (next task, reward, done) as the lab does."""
        total = self.place(self.tasks[self.k], n)
        self.k += 1
        done = self.k == len(self.tasks)
        return (None if done else self.tasks[self.k]), -total / 100, done

    # ------------------------------------------------------------------ the model

    def _layer_plan(self, n: int, image: int) -> tuple[float, tuple[float, ...], float]:
        """What node ``n`` lacks of ``image``: latest ready time of cached layers, queue increments, missing MB.

        Depends only on the node's cached layers, so it is memoised per node and image and forgotten whenever the
        node's layers change (in ``place``). Summation order is the lab's, layer by layer from 0.0.
        """
        plan = self._plans[n].get(image)
        if plan is None:
            node = self.nodes[n]
            latest, increments, missing = ABSENT, [], 0.0
            for digest, size_mb in self._image_layers[image]:
                ready = node.layers.get(digest)
                if ready is not None:
                    latest = max(latest, ready)
                else:
                    missing += size_mb
                    increments.append(size_mb / node.bandwidth)
            plan = (latest, tuple(increments), missing)
            self._plans[n][image] = plan
        return plan

    def _done(self, n: int, now: float, latest: float, increments: tuple[float, ...]) -> float:
        """When the last layer is on the node: the queue grows one missing layer at a time, as in the lab."""
        done = latest if latest > now else now
        if increments:
            t_free = self._download_free_at[n]
            if now > t_free:
                t_free = now
            for step in increments:
                t_free += step
            if t_free > done:
                done = t_free
        return done

    def estimate(self, n: int, task: Task) -> dict[str, float]:
        """Times for placing ``task`` on node ``n``: missing MB, download, wait, compute and total (seconds)."""
        now = task.arrival
        latest, increments, missing = self._layer_plan(n, task.image)
        done = self._done(n, now, latest, increments)
        compute = task.cycles / self.nodes[n].freq
        slot_free = self._slot_min[n]
        start = done if done > slot_free else slot_free
        return {
            "missing_mb": missing,
            "download": done - now,
            "wait": start - done,
            "compute": compute,
            "total": start + compute - now,
        }

    def totals(self, task: Task) -> list[float]:
        """Estimated completion time of ``task`` on every node (``estimate(n, task)["total"]`` for all n)."""
        now, image, cycles = task.arrival, task.image, task.cycles
        plans, download_free, slot_min, freq = self._plans, self._download_free_at, self._slot_min, self._freq_of
        out = []
        for n in range(self.n_nodes):  # _layer_plan and _done inlined: this loop is Greedy's whole cost
            plan = plans[n].get(image)
            latest, increments, _ = plan if plan is not None else self._layer_plan(n, image)
            done = latest if latest > now else now
            if increments:
                t_free = download_free[n]
                if now > t_free:
                    t_free = now
                for step in increments:
                    t_free += step
                if t_free > done:
                    done = t_free
            slot_free = slot_min[n]
            start = done if done > slot_free else slot_free
            out.append(start + cycles / freq[n] - now)
        return out

    def estimate_all(self, task: Task) -> Estimate:
        """``estimate`` for every node at once, as arrays of shape (n_nodes,)."""
        rows = [self.estimate(n, task) for n in range(self.n_nodes)]
        return Estimate(
            *(np.array([r[key] for r in rows]) for key in ("missing_mb", "download", "wait", "compute", "total"))
        )

    def feasible_nodes(self, task: Task) -> list[int]:
        """Indices of the nodes ``mask(task)`` allows, in order."""
        return list(self._feasible_nodes[task.image])

    def mask(self, task: Task) -> BoolArray:
        """Feasible nodes: those whose storage can hold the whole image."""
        mask: BoolArray = self._feasible[task.image].copy()
        return mask

    def observe(self, task: Task) -> npt.NDArray[np.float32]:
        """The lab's state: per node, missing GB, download, wait, compute and total (/100 s), free storage share."""
        now, image, cycles = task.arrival, task.image, task.cycles
        flat: list[float] = []
        for n in range(self.n_nodes):  # estimate() inlined: this is the hot path of learned policies
            latest, increments, missing = self._layer_plan(n, image)
            done = self._done(n, now, latest, increments)
            slot_free = self._slot_min[n]
            start = done if done > slot_free else slot_free
            compute = cycles / self._freq_of[n]
            flat += (
                missing / 1000,
                (done - now) / 100,
                (start - done) / 100,
                compute / 100,
                (start + compute - now) / 100,
                1 - self._used[n] / self._storage_of[n],
            )
        return np.array(flat, dtype=np.float32).reshape(self.n_nodes, self.n_features)

    def place(self, task: Task, n: int) -> float:
        """Apply the placement of ``task`` on node ``n`` and return its completion time."""
        node = self.nodes[n]
        e = self.estimate(n, task)
        total = e["total"]
        self.completion.append(total)
        if node.is_cloud:
            return total  # the cloud keeps no layers and never queues: nothing to remember
        now = task.arrival
        layers = self._image_layers[task.image]
        changed = self._make_room(n, self._image_digests[task.image], e["missing_mb"], now)
        t_free = max(now, node.download_free)
        for digest, size_mb in layers:
            if digest not in node.layers:
                t_free += size_mb / node.bandwidth
                node.layers[digest] = t_free
                changed.append(digest)
        if e["missing_mb"] > 0:
            node.download_free = t_free
            self._download_free_at[n] = t_free
        if changed:
            plans = self._plans[n]
            for digest in changed:
                for image in self._images_with_layer[digest]:
                    plans.pop(image, None)
            self._used[n] = sum(self.size[d] for d in node.layers)
        slots = node.slots
        slot = slots.index(min(slots))  # the first earliest-free slot, like np.argmin
        finish = now + total
        slots[slot] = finish
        self._slot_min[n] = min(slots)
        in_use = node.in_use
        for digest, _ in layers:
            in_use[digest] = max(in_use.get(digest, 0), finish)
        return total

    def _make_room(self, n: int, needed: frozenset[str], missing_mb: float, now: float) -> list[str]:
        """Evict unused layers, least recently used first, until ``missing_mb`` fits; returns the evicted ones."""
        node = self.nodes[n]
        free = node.storage - self._used[n]
        if free >= missing_mb:
            return []
        victims = sorted(
            (d for d in node.layers if d not in needed and node.layers[d] <= now and node.in_use.get(d, 0) <= now),
            key=lambda d: node.in_use.get(d, 0),
        )
        evicted: list[str] = []
        for digest in victims:
            if free >= missing_mb:
                break
            free += self.size[digest]
            del node.layers[digest]
            node.in_use.pop(digest, None)
            evicted.append(digest)
        return evicted
