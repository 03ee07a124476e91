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

Speed comes from not recomputing what has not changed, and from keeping the per-call loops short:

* what a node lacks of an image (a ``Plan``: latest cached-layer time, queue increments, missing MB and digests)
  only changes when that node's layers change. Plans are kept per image as one list over the nodes, so
  ``totals`` and ``observe`` walk a list instead of looking up a dict per node; each plan also holds its node's
  ``NodeState`` (the one list ``place`` updates), so that walk needs no zip over per-node lists. ``place`` forgets
  only the plans of the images that share a layer it added or evicted, on that node alone;
* per node, the MB stored and the free-storage share only change when that node's layers change, and the earliest
  free slot when it receives a task; ``place`` refreshes them (the MB summed in the lab's order, from a digest->MB
  dict kept in step with ``layers``), so ``observe`` and eviction never re-sum them;
* ``place`` takes the missing layers and their queue increments from the plan instead of walking the image again;
* ``observe`` packs its Python floats straight into a new float32 array (``struct``): the same C double->float
  rounding as the lab's ``np.array(rows, dtype=np.float32)``, at a fraction of the cost;
* the time by which every queued download is over (``_downloads_end``) only grows, in ``place``. A task arriving
  after it, the common case late in an episode, finds every queue idle and every cached layer there, so
  ``observe`` takes a shorter loop without the per-node queue and ready-time tests.

What cannot be cached is done per call in the lab's floating-point order: the download queue is advanced one missing
layer at a time from ``max(now, download_free)`` (a pre-summed total would round differently; the fold is
``_queue_end``, in C where ``sum`` adds in order), and every feature is divided exactly as the lab divides it. So
completion times, features and tie-breaks are bit-identical to the lab's implementation (``benchmarks/bench_sim.py`` and
``tests/sim/layers/test_lab_differential.py`` check this against transcriptions of the lab text). What is left is Python
work per node and call, about 0.25 us a node, and about 0.7 us a call to build the array; numpy costs about 0.5-1 us per
operation on arrays this small, so vectorising over 10 nodes was slower, and so were C-level ``map`` pipelines per
column (measured).

That per-node work is why ``observe()``, the hot path of learned policies, first hands the plans to a C kernel
(``sim/tracks/layers_v1/_observe.c``, ``observe_kernel``): the same expressions in C doubles, written straight into the
float32 array, about 5x faster than the Python loop (``benchmarks/bench_sim.py`` prints both). The Python loop stays: it
is the kernel's definition (``tests/sim/layers/test_observe_kernel.py`` compares them bit for bit), it runs where the
kernel was not built (the sandbox image, an install without a compiler), and it takes what the kernel declines (ints
where the plans hold floats). ``totals()`` (Greedy) and ``place()`` stay in Python: Greedy already meets its goal there.
"""

from __future__ import annotations

import functools
import operator
import random
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from layersched.sim.tracks.layers_v1.scenario import Scenario
from layersched.sim.tracks.layers_v1.workload import NodeSpec, Task, draw_episode

# observe()'s C kernel: fill_observation(plans, now, cycles, out) -> False where it leaves the case to Python.
ObserveKernel = Callable[[list[Any], float, float, object], bool]

# _observe.c, built where pip found a compiler; without it observe() gives the same bits in Python.
try:
    from layersched.sim.tracks.layers_v1._observe import fill_observation

    _BUILT_KERNEL: ObserveKernel | None = fill_observation
except ImportError:  # pragma: no cover - every machine that runs the tests builds it
    _BUILT_KERNEL = None

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]
    BoolArray = npt.NDArray[np.bool_]

ABSENT = float("-inf")  # latest ready time of an image none of whose layers a node holds

# Node n's state as the hot loops read it, one mutable list per node that place() updates in place: [time its
# download queue is free (download_free), earliest free slot, CPU frequency, free-storage share 1 - used / storage].
NodeState = list[float]
_QUEUE, _SLOT, _FREQ, _SHARE = range(4)

# What node n lacks of an image: (latest ready time of its cached layers, queue increment per missing layer in
# image order, missing MB, missing MB / 1000 as observe() reports it, the missing digests in image order, and node
# n's NodeState). The NodeState is the same list in all of n's plans: a loop over an image's plans reads each node's
# current state from its plan, without zipping per-node lists (zip and its unpacking cost about 0.5 us a call).
Plan = tuple[float, tuple[float, ...], float, float, tuple[str, ...], NodeState]

_FIRST = operator.itemgetter(0)

# numpy, imported by the first call that returns an array (mask, observe, estimate_all): the baselines and the
# episode loop never do, and importing numpy was a third of ``python -m layersched.sim``'s whole run (0.2 s).
_np: ModuleType | None = None
_FLOAT32: Any = None  # np.dtype(np.float32), a dtype object: numpy converts the np.float32 type on every call


def _numpy() -> ModuleType:
    global _np, _FLOAT32
    if _np is None:
        import numpy

        _FLOAT32 = numpy.dtype(numpy.float32)
        _np = numpy
    return _np


def _fold_left(increments: tuple[float, ...], start: float) -> float:
    """``start + increments[0] + increments[1] + ...``, added left to right: the lab's ``t_free += ...`` loop."""
    return functools.reduce(operator.add, increments, start)


# The download queue after a node's missing layers: _queue_end(increments, start). CPython's sum() before 3.12 adds
# floats left to right in a C double, the lab's loop bit for bit in one C call (the cheapest form measured); since
# 3.12 it compensates rounding (Neumaier), so there the fold is explicit (tests/sim/layers/test_observe_fast.py).
_queue_end: Callable[[tuple[float, ...], float], float] = (
    sum if sys.implementation.name == "cpython" and sys.version_info < (3, 12) else _fold_left
)


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
    # The C kernel observe() tries first, or None for the Python loop alone (tests and benchmarks compare the two).
    observe_kernel: ObserveKernel | None = _BUILT_KERNEL

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
        self._image_digest_seq = [tuple(d for d, _ in layers) for layers in self._image_layers]  # in image order
        self._image_size = tuple(self.image_mb)  # a copy policies cannot edit (the baselines read it)
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
        # Per-node mirrors of the lab's state (see NodeState): indexing lists is cheaper than attribute lookups.
        self._state: list[NodeState] = [[0.0, 0.0, s.freq, 1.0] for s in specs]
        self._used = [0.0] * self.n_nodes  # MB of cached layers, summed in the lab's order after every change
        # digest -> MB of node n's layers, in node.layers' order: the lab's sum over node.layers without lookups.
        self._layer_mb: list[dict[str, float]] = [{} for _ in specs]
        # _plans[image][n] is node n's Plan for image, None once a layer change made it stale; _stale[image] lists
        # the nodes whose entry is None, so the hot loops test one list instead of every entry.
        self._plans: list[list[Plan | None]] = [[None] * self.n_nodes for _ in self.image_mb]
        self._stale = [list(range(self.n_nodes)) for _ in self.image_mb]
        # _held_mb[image][n]: the MB of image's layers node n holds, summed in the image's order as the lab's
        # baselines sum them (Dep, LRS); computed with the plan it sits beside, and valid while that plan is.
        self._held_mb = [[0.0] * self.n_nodes for _ in self.image_mb]
        # _fits[image][n]: whether node n can store the whole image (the mask, as Python bools); its numpy form is
        # built on the first mask() call, which the baselines and check_action never make.
        self._fits = [[mb <= s.storage for s in specs] for mb in self.image_mb]
        self._feasible_nodes = [[n for n, fits in enumerate(row) if fits] for row in self._fits]
        self._masks: list[BoolArray] | None = None
        # No download is queued or arriving after this time on any node: the largest queue end and layer ready time
        # so far (evictions leave it an upper bound). From then on every queue starts at ``now`` (observe's fast path).
        self._downloads_end = 0.0
        self._pack_observation = struct.Struct(f"{self.n_nodes * self.n_features}f").pack_into
        self._observe_shape = (self.n_nodes, self.n_features)
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

    def _layer_plan(self, n: int, image: int) -> Plan:
        """Node ``n``'s Plan for ``image``, computed if stale."""
        plan = self._plans[image][n]
        return self._new_plan(n, image) if plan is None else plan

    def _new_plan(self, n: int, image: int) -> Plan:
        """Compute and keep node ``n``'s Plan for ``image`` and the MB of it the node holds (``_held_mb``).

        Summation order is the lab's, layer by layer.
        """
        node = self.nodes[n]
        cached = node.layers
        if cached.keys() >= self._image_digests[image]:
            # The node holds the whole image, the common case once caches are warm: nothing is missing, the latest
            # ready time is the largest (max keeps the loop's value), and the MB held are the image's own sum.
            plan: Plan = (
                max(map(cached.__getitem__, self._image_digest_seq[image]), default=ABSENT),
                (),
                0.0,
                0.0,
                (),
                self._state[n],
            )
            held = self._image_size[image]
        else:
            bandwidth = node.bandwidth
            latest, increments, missing, digests, held_sizes = ABSENT, [], 0.0, [], []
            for digest, size_mb in self._image_layers[image]:
                ready = cached.get(digest)
                if ready is None:
                    missing += size_mb
                    increments.append(size_mb / bandwidth)
                    digests.append(digest)
                else:
                    held_sizes.append(size_mb)
                    if ready > latest:
                        latest = ready
            plan = (latest, tuple(increments), missing, missing / 1000, tuple(digests), self._state[n])
            held = sum(held_sizes)  # the lab's sum() of the held layers' MB, in image order
        self._plans[image][n] = plan
        self._held_mb[image][n] = held
        return plan

    def _plans_for(self, image: int) -> list[Plan]:
        """Every node's Plan for ``image``, computing the stale ones."""
        stale = self._stale[image]
        if stale:
            for n in stale:
                self._layer_plan(n, image)
            stale.clear()
        return self._plans[image]  # type: ignore[return-value]  # no None left

    def _done(self, n: int, now: float, plan: Plan) -> float:
        """When the last layer is on the node: the queue grows one missing layer at a time, as in the lab.

        The lab takes the max of ``now``, the cached layers' ready times and the queue after each layer; the queue
        only grows and starts at ``now`` or later, so with missing layers that max is max(latest, final queue).
        """
        latest, increments = plan[0], plan[1]
        if not increments:
            return latest if latest > now else now
        t_queue = plan[5][_QUEUE]
        done = _queue_end(increments, t_queue if t_queue > now else now)
        return latest if latest > done else done

    def estimate(self, n: int, task: Task) -> dict[str, float]:
        """Times for placing ``task`` on node ``n``: missing MB, download, wait, compute and total (seconds)."""
        now = task.arrival
        plan = self._layer_plan(n, task.image)
        done = self._done(n, now, plan)
        _, slot_free, freq, _ = plan[5]
        compute = task.cycles / freq
        start = done if done > slot_free else slot_free
        return {
            "missing_mb": plan[2],
            "download": done - now,
            "wait": start - done,
            "compute": compute,
            "total": start + compute - now,
        }

    def totals(self, task: Task) -> list[float]:
        """Estimated completion time of ``task`` on every node (``estimate(n, task)["total"]`` for all n)."""
        now, image, cycles = task.arrival, task.image, task.cycles
        plans = self._plans_for(image) if self._stale[image] else self._plans[image]
        out = []
        # estimate() inlined (this loop is Greedy's main cost); see _done for why done is computed this way.
        for latest, increments, _, _, _, (t_queue, slot_free, freq, _) in plans:  # type: ignore[misc]
            if increments:
                done = _queue_end(increments, t_queue if t_queue > now else now)
                if latest > done:
                    done = latest
            elif latest > now:
                done = latest
            else:
                done = now
            out.append((slot_free if slot_free > done else done) + cycles / freq - now)
        return out

    def estimate_all(self, task: Task) -> Estimate:
        """``estimate`` for every node at once, as arrays of shape (n_nodes,)."""
        rows = [self.estimate(n, task) for n in range(self.n_nodes)]
        np = _np or _numpy()
        return Estimate(
            *(np.array([r[key] for r in rows]) for key in ("missing_mb", "download", "wait", "compute", "total"))
        )

    def feasible_nodes(self, task: Task) -> list[int]:
        """Indices of the nodes ``mask(task)`` allows, in order."""
        return list(self._feasible_nodes[task.image])

    def mask(self, task: Task) -> BoolArray:
        """Feasible nodes: those whose storage can hold the whole image."""
        masks = self._masks
        if masks is None:
            np = _np or _numpy()
            masks = self._masks = [np.array(row) for row in self._fits]
        mask: BoolArray = masks[task.image].copy()
        return mask

    def observe(self, task: Task) -> npt.NDArray[np.float32]:
        """The lab's state: per node, missing GB, download, wait, compute and total (/100 s), free storage share."""
        now, image, cycles = task.arrival, task.image, task.cycles
        plans = self._plans_for(image) if self._stale[image] else self._plans[image]
        state: npt.NDArray[np.float32] = (_np or _numpy()).empty(self._observe_shape, _FLOAT32)
        kernel = self.observe_kernel
        if kernel is not None and kernel(plans, now, cycles, state):
            return state
        # The Python loop: the kernel's definition, and what runs where it was not built or declined (an int where
        # the plans hold floats, a frequency of 0.0).
        flat: list[float] = []
        fold = _queue_end  # a local name is cheaper to read than a global, once per node
        # estimate() inlined, as in totals(): this is the hot path of learned policies. The branches only skip
        # arithmetic whose result is known exactly: (x - x) / 100 is 0.0. Dividing by 100.0 rather than 100 is the
        # same division (100 converts exactly) without converting the int each time.
        if self._downloads_end <= now:
            # Every queue is idle by now and every cached layer is there: a node's download starts at now, and its
            # layers are ready when the last missing one is, or at now if none is missing (see _done). Most calls
            # late in an episode, when tasks arrive after the downloads of earlier ones, take this shorter loop.
            # Each row is built in one expression per case: naming the intermediate features costs more than the
            # arithmetic here. A node missing nothing has its layers at now (no fold, download 0.0).
            for _, increments, _, missing_gb, _, (_, slot_free, freq, share) in plans:  # type: ignore[misc]
                compute = cycles / freq
                done = fold(increments, now) if increments else now
                if slot_free > done:  # the container waits for a slot
                    flat += (
                        missing_gb,
                        (done - now) / 100.0,
                        (slot_free - done) / 100.0,
                        compute / 100.0,
                        (slot_free + compute - now) / 100.0,
                        share,
                    )
                else:
                    flat += (
                        missing_gb,
                        (done - now) / 100.0,
                        0.0,
                        compute / 100.0,
                        (done + compute - now) / 100.0,
                        share,
                    )
        else:
            for latest, increments, _, missing_gb, _, (t_queue, slot_free, freq, share) in plans:  # type: ignore[misc]
                if increments:
                    done = fold(increments, t_queue if t_queue > now else now)
                    if latest > done:
                        done = latest
                    download = (done - now) / 100.0
                elif latest > now:  # a layer queued for an earlier task is still downloading
                    done = latest
                    download = (done - now) / 100.0
                else:
                    done, download = now, 0.0
                compute = cycles / freq
                if slot_free > done:
                    wait, start = (slot_free - done) / 100.0, slot_free
                else:
                    wait, start = 0.0, done
                flat += (missing_gb, download, wait, compute / 100.0, (start + compute - now) / 100.0, share)
        # Native "f" packing is the C double->float cast, the same rounding np.array(rows, dtype=float32) does. An
        # empty array packed in place is the cheapest fresh, writable, C-contiguous result measured.
        # numpy's stubs declare ndarray.__buffer__ only for Python 3.12+, where typing learnt the buffer protocol.
        self._pack_observation(state, 0, *flat)  # type: ignore[arg-type]
        return state

    def place(self, task: Task, n: int) -> float:
        """Apply the placement of ``task`` on node ``n`` and return its completion time."""
        now, image = task.arrival, task.image
        plan = self._plans[image][n]
        if plan is None:
            plan = self._new_plan(n, image)
        done = self._done(n, now, plan)
        increments, node_state = plan[1], plan[5]
        slot_free = node_state[_SLOT]
        start = done if done > slot_free else slot_free
        total = start + task.cycles / node_state[_FREQ] - now
        self.completion.append(total)
        node = self.nodes[n]
        if node.is_cloud:
            return total  # the cloud keeps no layers and never queues: nothing to remember
        missing_mb, layers, layer_mb = plan[2], node.layers, self._layer_mb[n]
        changed = self._make_room(n, image, missing_mb, now) if node.storage - self._used[n] < missing_mb else []
        if increments:
            # Eviction spares the image's own layers, so the plan's missing layers are still the missing ones.
            t_free = node_state[_QUEUE]
            if now > t_free:
                t_free = now
            for digest, step in zip(plan[4], increments, strict=False):  # the same length: one per missing digest
                if digest not in layers:  # an image listing a layer twice downloads it once, as in the lab
                    t_free += step
                    layers[digest] = t_free
                    layer_mb[digest] = self.size[digest]
                    changed.append(digest)
            if missing_mb > 0:
                node.download_free = node_state[_QUEUE] = t_free
            if t_free > self._downloads_end:  # t_free is the latest ready time this placement gave a layer
                self._downloads_end = t_free
        if changed:
            self._forget_plans(n, changed)
            used = self._used[n] = sum(layer_mb.values())
            node_state[_SHARE] = 1 - used / node.storage
        slots = node.slots
        slot = slots.index(min(slots))  # the first earliest-free slot, like np.argmin
        finish = now + total
        slots[slot] = finish
        node_state[_SLOT] = min(slots)
        in_use = node.in_use
        get = in_use.get
        for digest in self._image_digest_seq[image]:
            # The lab's in_use[d] = max(in_use.get(d, 0), finish), writing only what that changes.
            last = get(digest)
            if last is None:
                in_use[digest] = finish if finish > 0 else 0
            elif finish > last:
                in_use[digest] = finish
        return total

    def _forget_plans(self, n: int, digests: list[str]) -> None:
        """Node ``n`` gained or lost these layers: its plans for the images containing them are stale."""
        plans, stale, images_with_layer = self._plans, self._stale, self._images_with_layer
        for digest in digests:
            for image in images_with_layer[digest]:
                row = plans[image]
                if row[n] is not None:
                    row[n] = None
                    stale[image].append(n)

    def _make_room(self, n: int, image: int, missing_mb: float, now: float) -> list[str]:
        """Evict unused layers, least recently used first, until ``missing_mb`` fits; returns the evicted ones."""
        node = self.nodes[n]
        needed = self._image_digests[image]
        free = node.storage - self._used[n]
        if free >= missing_mb:
            return []
        last_use = node.in_use.get
        # (last use, digest) of every layer that is downloaded, unused by now and not the image's own, in the order
        # of node.layers: the stable sort on the last use alone keeps that order among ties, as the lab's does.
        unused = []
        for digest, ready in node.layers.items():
            if ready <= now and digest not in needed:
                last = last_use(digest, 0)
                if last <= now:
                    unused.append((last, digest))
        unused.sort(key=_FIRST)
        evicted: list[str] = []
        for _, digest in unused:
            if free >= missing_mb:
                break
            free += self.size[digest]
            del node.layers[digest]
            del self._layer_mb[n][digest]
            node.in_use.pop(digest, None)
            evicted.append(digest)
        return evicted
