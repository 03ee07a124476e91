"""Benchmark: layersched.sim against a straightforward transcription of the lab's algorithm, in one run.

Measurements on the same episodes (lab catalog, 10 nodes, rate 0.3, 500 tasks), the same calls on both sides:

* per-decision cost of a whole Greedy episode (policy + step);
* per-call cost of ``observe()`` late in an episode: one call for each of the 50 remaining tasks against the
  state after 450 Greedy placements (many layers cached), so every call sees a different task;
* the same 50 calls "live": each followed by that task's placement (not timed), as a learned policy runs, so the
  state changes between calls as it does in an episode.

The transcription below (``LabEnv``) follows the lab text's ``ClusterEnv`` line by line: per-node Python loops, a
dict per estimate, storage summed over every cached layer on each call. It lives only here, as the named reference.
Before timing, both simulators run the same episodes and must produce identical actions, completion times equal
to 1e-9 relative and identical ``observe()`` arrays before every placement and for every late task; the benchmark
refuses to report figures otherwise.

The live row times each call on its own: the timer (about 0.1 us a call) is in both sides' figures.

layersched.sim runs twice: as installed (``observe()`` through its C kernel, sim/tracks/layers_v1/_observe.c, where pip
built it) and with ``observe_kernel = None`` (observe()'s Python loop, which the sandbox image runs and which is the
kernel's definition). Both are checked against the transcription before timing. Greedy does not call ``observe()``, so
its two figures differ only by noise.

Run: ``python benchmarks/bench_sim.py [--repeats 5] [--seeds 5]``
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from layersched.sim.tracks.layers_v1.baselines import greedy_estimate
from layersched.sim.tracks.layers_v1.catalog import load_catalog
from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.scenario import Scenario

# ----------------------------------------------------------------------------- the reference transcription


@dataclass
class LabNode:
    bandwidth: float
    freq: float
    storage: float
    slots: list[float]
    layers: dict[str, float] = field(default_factory=dict)
    in_use: dict[str, float] = field(default_factory=dict)
    download_free: float = 0.0


@dataclass
class LabTask:
    arrival: float
    image: int
    cycles: float


class LabEnv:
    n_features = 6

    def __init__(
        self,
        images: list[dict[str, Any]],
        n_nodes: int = 10,
        n_tasks: int = 500,
        arrival_rate: float = 0.3,
        slots: int = 4,
    ) -> None:
        self.images = images
        self.size = {la["digest"]: la["size_mb"] for im in images for la in im["layers"]}
        self.image_mb = [sum(la["size_mb"] for la in im["layers"]) for im in images]
        self.n_nodes, self.n_tasks, self.rate, self.n_slots = n_nodes, n_tasks, arrival_rate, slots

    def reset(self, seed: int) -> LabTask:
        rng = random.Random(seed)
        self.nodes = [
            LabNode(rng.uniform(60, 90) / 8, rng.uniform(0.8, 1.2), rng.uniform(5, 15) * 1024, [0.0] * self.n_slots)
            for _ in range(self.n_nodes)
        ]
        order = list(range(len(self.images)))
        rng.shuffle(order)
        weights = [1 / (r + 1) for r in range(len(order))]
        t, self.tasks = 0.0, []
        for _ in range(self.n_tasks):
            t += rng.expovariate(self.rate)
            self.tasks.append(LabTask(t, rng.choices(order, weights)[0], rng.uniform(20, 80)))
        self.k = 0
        self.completion: list[float] = []
        return self.tasks[0]

    def estimate(self, n: int, task: LabTask) -> dict[str, float]:
        node, now = self.nodes[n], task.arrival
        t_free = max(now, node.download_free)
        done, missing = now, 0.0
        for la in self.images[task.image]["layers"]:
            if la["digest"] in node.layers:
                done = max(done, node.layers[la["digest"]])
            else:
                missing += la["size_mb"]
                t_free += la["size_mb"] / node.bandwidth
                done = max(done, t_free)
        compute = task.cycles / node.freq
        start = max(done, min(node.slots))
        return {
            "missing_mb": missing,
            "download": done - now,
            "wait": start - done,
            "compute": compute,
            "total": start + compute - now,
        }

    def mask(self, task: LabTask) -> np.ndarray:
        return np.array([self.image_mb[task.image] <= nd.storage for nd in self.nodes])

    def observe(self, task: LabTask) -> np.ndarray:
        rows = []
        for n, node in enumerate(self.nodes):
            e = self.estimate(n, task)
            used = sum(self.size[d] for d in node.layers)
            rows.append(
                [
                    e["missing_mb"] / 1000,
                    e["download"] / 100,
                    e["wait"] / 100,
                    e["compute"] / 100,
                    e["total"] / 100,
                    1 - used / node.storage,
                ]
            )
        return np.array(rows, dtype=np.float32)

    def _make_room(self, node: LabNode, need: set[str], missing: float, now: float) -> None:
        free = node.storage - sum(self.size[d] for d in node.layers)
        victims = sorted(
            (d for d in node.layers if d not in need and node.layers[d] <= now and node.in_use.get(d, 0) <= now),
            key=lambda d: node.in_use.get(d, 0),
        )
        for d in victims:
            if free >= missing:
                break
            free += self.size[d]
            del node.layers[d]
            node.in_use.pop(d, None)

    def step(self, n: int) -> tuple[LabTask | None, float, bool]:
        task, node = self.tasks[self.k], self.nodes[n]
        e = self.estimate(n, task)
        layers = self.images[task.image]["layers"]
        self._make_room(node, {la["digest"] for la in layers}, e["missing_mb"], task.arrival)
        t_free = max(task.arrival, node.download_free)
        for la in layers:
            if la["digest"] not in node.layers:
                t_free += la["size_mb"] / node.bandwidth
                node.layers[la["digest"]] = t_free
        if e["missing_mb"] > 0:
            node.download_free = t_free
        i = int(np.argmin(node.slots))
        finish = task.arrival + e["total"]
        node.slots[i] = finish
        for la in layers:
            node.in_use[la["digest"]] = max(node.in_use.get(la["digest"], 0), finish)
        self.completion.append(e["total"])
        self.k += 1
        done = self.k == self.n_tasks
        return (None if done else self.tasks[self.k]), -e["total"] / 100, done


def lab_greedy(env: LabEnv, task: LabTask, rng: random.Random) -> int:
    scores = -np.array([env.estimate(n, task)["total"] for n in range(env.n_nodes)])
    scores = np.where(env.mask(task), scores, -np.inf)
    best = np.flatnonzero(scores == scores.max())
    return int(rng.choice(best))  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- measurement

WARMUP = 450  # placements before the late observe() measurements: by then the nodes hold many layers


def greedy_episode(env: Any, policy: Any, seed: int) -> tuple[list[int], list[float], float]:
    """Run one Greedy episode; return actions, completion times and seconds per decision."""
    rng = random.Random(seed)
    task = env.reset(seed)
    actions: list[int] = []
    start = time.perf_counter()
    done = False
    while not done:
        action = policy(env, task, rng)
        actions.append(action)
        task, _, done = env.step(action)
    elapsed = time.perf_counter() - start
    return actions, list(env.completion), elapsed / len(actions)


def warm_up(env: Any, policy: Any, seed: int) -> random.Random:
    """Reset to ``seed`` and place the first ``WARMUP`` tasks with Greedy; return the policy's generator."""
    rng = random.Random(seed)
    task = env.reset(seed)
    for _ in range(WARMUP):
        task, _, _ = env.step(policy(env, task, rng))
    return rng


def late_observe_cost(env: Any, policy: Any, seed: int) -> float:
    """Seconds per observe() call, one call per remaining task against the state after ``WARMUP`` placements.

    Every call sees a different task (arrival, image, cycles), so no call's answer serves another. What depends on
    the state alone (layersched's per node and image plans) does carry over, as it does between placements; the
    live measurement changes the state between calls.
    """
    warm_up(env, policy, seed)
    remaining = env.tasks[WARMUP:]
    start = time.perf_counter()
    for task in remaining:
        env.observe(task)
    return (time.perf_counter() - start) / len(remaining)


def live_observe_cost(env: Any, policy: Any, seed: int) -> float:
    """Seconds per observe() call on the remaining tasks, each followed by its Greedy placement (not timed).

    The way a learned policy calls it: every placement changes one node's layers, slots and queue in between.
    """
    rng = warm_up(env, policy, seed)
    task, done, elapsed, calls = env.tasks[WARMUP], False, 0.0, 0
    while not done:
        start = time.perf_counter()
        env.observe(task)
        elapsed += time.perf_counter() - start
        calls += 1
        task, _, done = env.step(policy(env, task, rng))
    return elapsed / calls


def layersched_env(kernel: bool) -> ClusterEnv:
    """layersched's simulator on the lab catalog, with observe()'s C kernel or with its Python loop alone."""
    env = ClusterEnv(Scenario(catalog=load_catalog("lab")))
    if not kernel:
        env.observe_kernel = None
    elif env.observe_kernel is None:
        raise SystemExit("observe()'s C kernel is not built (pip install -e . needs a C compiler and Python headers)")
    return env


def check_identical(seeds: list[int], ours: ClusterEnv) -> None:
    """Refuse to time anything unless both simulators agree: actions, completion times and every observe()."""
    lab = LabEnv(load_catalog("lab").to_json())
    for seed in seeds:
        a_actions, a_done, _ = greedy_episode(ours, greedy_estimate, seed)
        b_actions, b_done, _ = greedy_episode(lab, lab_greedy, seed)
        if a_actions != b_actions:
            raise SystemExit(f"seed {seed}: actions differ from the lab transcription")
        worst = max(abs(x - y) / abs(y) for x, y in zip(a_done, b_done, strict=True))
        if worst > 1e-9:
            raise SystemExit(f"seed {seed}: completion times differ by {worst:.2e} relative")
        # observe() before every placement, and at the state after WARMUP placements for every remaining task.
        task_a, task_b = ours.reset(seed), lab.reset(seed)
        rng_a, rng_b = random.Random(seed), random.Random(seed)
        for k in range(len(a_actions)):
            if k == WARMUP:
                for later_a, later_b in zip(ours.tasks[WARMUP:], lab.tasks[WARMUP:], strict=True):
                    if not np.array_equal(ours.observe(later_a), lab.observe(later_b)):
                        raise SystemExit(f"seed {seed}: late observe() differs from the lab transcription")
            if not np.array_equal(ours.observe(task_a), lab.observe(task_b)):
                raise SystemExit(f"seed {seed}: observe() before placement {k} differs from the lab transcription")
            task_a, _, _ = ours.step(greedy_estimate(ours, task_a, rng_a))
            task_b, _, _ = lab.step(lab_greedy(lab, task_b, rng_b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5, help="timed repetitions; medians are reported")
    parser.add_argument("--seeds", type=int, default=5, help="episodes (seeds 0..N-1) per repetition")
    args = parser.parse_args()
    seeds = list(range(args.seeds))
    sides: dict[str, Any] = {
        "lab transcription": (LabEnv(load_catalog("lab").to_json()), lab_greedy),
        "layersched.sim": (layersched_env(kernel=True), greedy_estimate),
        "Python loop": (layersched_env(kernel=False), greedy_estimate),
    }
    for env, _ in list(sides.values())[1:]:
        check_identical(seeds, env)
    measurements = {
        "greedy per decision": lambda env, policy, seed: greedy_episode(env, policy, seed)[2],
        "late observe()": late_observe_cost,
        "late observe(), live": live_observe_cost,
    }
    times: dict[str, dict[str, list[float]]] = {name: {side: [] for side in sides} for name in measurements}
    for _ in range(args.repeats):
        for name, measure in measurements.items():
            for side, (env, policy) in sides.items():
                times[name][side].append(statistics.fmean(measure(env, policy, s) for s in seeds))
    print(f"identical actions, completion times (<=1e-9 rel.) and observe() on seeds {seeds}: yes")
    print(
        f"{'measurement':22s} {'lab transcription':>18s} {'layersched.sim':>15s} {'speed-up':>9s}"
        f" {'Python loop':>12s} {'speed-up':>9s}"
    )
    for name, by_side in times.items():
        lab_med, ours_med, loop_med = (statistics.median(by_side[side]) for side in sides)
        print(
            f"{name:22s} {lab_med * 1e6:15.1f} us {ours_med * 1e6:12.1f} us {lab_med / ours_med:8.1f}x"
            f" {loop_med * 1e6:9.1f} us {lab_med / loop_med:8.1f}x"
        )
    print(
        f"(medians of {args.repeats} repetitions x {len(seeds)} episodes, lab catalog, 10 nodes, rate 0.3, 500 tasks;"
        f" observe() on tasks {WARMUP}-499; 'Python loop': layersched.sim with observe_kernel = None)"
    )


if __name__ == "__main__":
    main()
