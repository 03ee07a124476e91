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
policy written during the lab runs unchanged. The node state lives twice: in the lab's dictionaries, which decide
eviction order, and in numpy arrays that make ``estimate_all`` and ``observe`` cost one vectorised pass over the
nodes instead of a Python loop per node and per layer. Both are updated together in ``place``.
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
        self._column = {digest: col for col, digest in enumerate(self.size)}
        self._image_layers = [tuple((la.digest, la.size_mb) for la in im.layers) for im in catalog.images]
        self._image_cols = [np.array([self._column[d] for d, _ in layers], dtype=np.intp) for layers in self._image_layers]
        self._image_sizes = [np.array([s for _, s in layers], dtype=np.float64) for layers in self._image_layers]
        self._image_digests = [frozenset(d for d, _ in layers) for layers in self._image_layers]
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
        n_layers = len(self._column)
        self._z = np.full((self.n_nodes, n_layers), ABSENT)
        self._slot_free = np.zeros((self.n_nodes, max(s.slots for s in specs)))
        for n, s in enumerate(specs):
            self._slot_free[n, s.slots :] = np.inf  # padding never wins argmin/min
        self._download_free = np.zeros(self.n_nodes)
        self._bandwidth = np.array([s.bandwidth for s in specs])
        self._freq = np.array([s.freq for s in specs])
        self._storage = np.array([s.storage for s in specs])
        self._used = np.zeros(self.n_nodes)
        self._feasible = [np.array([mb <= s.storage for s in specs]) for mb in self.image_mb]
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

    def estimate(self, n: int, task: Task) -> dict[str, float]:
        """Times for placing ``task`` on node ``n``: missing MB, download, wait, compute and total (seconds)."""
        node, now = self.nodes[n], task.arrival
        t_free = max(now, node.download_free)
        done, missing = now, 0.0
        for digest, size_mb in self._image_layers[task.image]:
            ready = node.layers.get(digest)
            if ready is not None:  # cached or already queued: wait for it
                done = max(done, ready)
            else:  # joins the download queue behind everything already in it
                missing += size_mb
                t_free += size_mb / node.bandwidth
                done = max(done, t_free)
        compute = task.cycles / node.freq
        start = max(done, min(node.slots))
        return {"missing_mb": missing, "download": done - now, "wait": start - done, "compute": compute,
                "total": start + compute - now}

    def estimate_all(self, task: Task) -> Estimate:
        """``estimate`` for every node at once, with the same floating-point operations in the same order."""
        cols, sizes, now = self._image_cols[task.image], self._image_sizes[task.image], task.arrival
        ready = self._z[:, cols]
        absent = ready == ABSENT
        queue = np.empty((self.n_nodes, len(cols) + 1))
        queue[:, 0] = np.maximum(now, self._download_free)
        queue[:, 1:] = np.where(absent, sizes / self._bandwidth[:, None], 0.0)
        np.cumsum(queue, axis=1, out=queue)  # sequential sums: t_free += size / bandwidth, layer by layer
        done = np.maximum(now, np.where(absent, queue[:, 1:], ready).max(axis=1))
        missing = np.cumsum(np.where(absent, sizes, 0.0), axis=1)[:, -1]
        compute = task.cycles / self._freq
        start = np.maximum(done, self._slot_free.min(axis=1))
        return Estimate(missing, done - now, start - done, compute, start + compute - now)

    def mask(self, task: Task) -> BoolArray:
        """Feasible nodes: those whose storage can hold the whole image."""
        return self._feasible[task.image].copy()

    def observe(self, task: Task) -> npt.NDArray[np.float32]:
        """The lab's state: per node, missing GB, download, wait, compute and total (/100 s), free storage share."""
        e = self.estimate_all(task)
        rows = np.column_stack(
            [e.missing_mb / 1000, e.download / 100, e.wait / 100, e.compute / 100, e.total / 100,
             1 - self._used / self._storage]
        )
        return rows.astype(np.float32)

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
        self._make_room(n, self._image_digests[task.image], e["missing_mb"], now)
        t_free = max(now, node.download_free)
        for digest, size_mb in layers:
            if digest not in node.layers:
                t_free += size_mb / node.bandwidth
                node.layers[digest] = t_free
                self._z[n, self._column[digest]] = t_free
        if e["missing_mb"] > 0:
            node.download_free = t_free
            self._download_free[n] = t_free
        slot = int(np.argmin(node.slots))
        finish = now + total
        node.slots[slot] = finish
        self._slot_free[n, slot] = finish
        for digest, _ in layers:
            node.in_use[digest] = max(node.in_use.get(digest, 0), finish)
        self._used[n] = sum(self.size[d] for d in node.layers)
        return total

    def _make_room(self, n: int, needed: frozenset[str], missing_mb: float, now: float) -> None:
        """Evict unused layers, least recently used first, until ``missing_mb`` fits (or nothing is left)."""
        node = self.nodes[n]
        free = node.storage - sum(self.size[d] for d in node.layers)
        if free >= missing_mb:
            return
        victims = sorted(
            (d for d in node.layers if d not in needed and node.layers[d] <= now and node.in_use.get(d, 0) <= now),
            key=lambda d: node.in_use.get(d, 0),
        )
        for digest in victims:
            if free >= missing_mb:
                break
            free += self.size[digest]
            del node.layers[digest]
            node.in_use.pop(digest, None)
            self._z[n, self._column[digest]] = ABSENT
