"""observe()'s two loops (downloads all finished by ``now``, or not) against the lab model, on tasks of any time.

The differential test observes each task just before its placement, which mostly takes the loop for queued downloads;
these observe many tasks against one state, earlier and later than its downloads, as a learned policy's look-ahead or
the benchmark's late calls do, so both loops and the switch between them are checked bit for bit. Each test runs twice:
through observe()'s C kernel (sim/tracks/layers_v1/_observe.c), and with ``observe_kernel = None``, through the Python
loops the kernel is defined by.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from layersched.sim.tracks.layers_v1.baselines import BASELINES
from layersched.sim.tracks.layers_v1.catalog import load_catalog
from layersched.sim.tracks.layers_v1.env import ClusterEnv, _queue_end
from layersched.sim.tracks.layers_v1.scenario import CloudNode, NodeRanges, Scenario
from layersched.sim.tracks.layers_v1.workload import Task
from tests.sim.layers.test_lab_differential import LabModel


def _left_to_right(increments: tuple[float, ...], start: float) -> float:
    done = start
    for step in increments:
        done += step
    return done


def test_queue_end_adds_left_to_right() -> None:
    # Cases where a compensated or pairwise sum rounds differently from the lab's loop, then random queues.
    cases: list[tuple[tuple[float, ...], float]] = [
        ((1.0, -1e100, 1e100), 1e100),
        ((0.1,) * 10, 0.0),
        ((1e-16,) * 8, 1.0),
        ((), 3.5),
    ]
    rng = random.Random(0)
    for _ in range(2000):
        start = rng.uniform(0, 5000)
        cases.append((tuple(rng.uniform(0, 200) for _ in range(rng.randint(0, 9))), start))
    for increments, start in cases:
        assert _queue_end(increments, start).hex() == _left_to_right(increments, start).hex(), (increments, start)


SCENARIOS = {
    "lab": Scenario(n_tasks=300),
    "with-cloud": Scenario(n_tasks=300, arrival_rate=0.5, cloud=CloudNode()),
    "small-nodes-evict": Scenario(n_nodes=4, n_tasks=300, nodes=NodeRanges(storage_gb=(1.6, 3.0))),
    "hub-zero-byte-layers": Scenario(catalog=load_catalog("hub-top70-2023-07"), n_nodes=6, n_tasks=300),
}


def _features_from_estimate(env: ClusterEnv, task: Task) -> np.ndarray:
    """The lab's observe() over ClusterEnv.estimate(), which takes neither of observe()'s loops."""
    rows = []
    for n, node in enumerate(env.nodes):
        e = env.estimate(n, task)
        used = sum(env.size[d] for d in node.layers)
        share = 1 - used / node.storage
        rows.append(
            [e["missing_mb"] / 1000, e["download"] / 100, e["wait"] / 100, e["compute"] / 100, e["total"] / 100, share]
        )
    return np.array(rows, dtype=np.float32)


IMPLEMENTATIONS = ["kernel", "python"]


def _env(scenario: Scenario, implementation: str) -> ClusterEnv:
    env = ClusterEnv(scenario)
    if implementation == "python":
        env.observe_kernel = None
    else:
        assert env.observe_kernel is not None, "observe()'s C kernel is not built (see test_observe_kernel.py)"
    return env


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("scenario", list(SCENARIOS.values()), ids=list(SCENARIOS))
def test_observe_any_task_matches_the_lab_model(scenario: Scenario, implementation: str) -> None:
    env = _env(scenario, implementation)
    task: Task | None = env.reset(3)
    # The lab model has no cloud node (which keeps no layers); there the reference is estimate(), itself checked
    # against the lab model by the differential test.
    lab = None if scenario.cloud is not None else LabModel(env.images, env)
    greedy, rng, probe = BASELINES["Greedy"], random.Random(3), random.Random(4)
    loops = {"downloads done": 0, "downloads queued": 0}
    while task is not None:
        if env.k % 25 == 0:
            # The remaining tasks, and tasks around the end of the queued downloads, against this state.
            ends = [env._downloads_end, *(node.download_free for node in env.nodes)]
            around = [
                Task(t + d, probe.randrange(len(env.images)), 50.0) for t in ends for d in (-1.0, 0.0, 1e-9, 30.0)
            ]
            for later in [*env.tasks[env.k :], *around]:
                loops["downloads done" if env._downloads_end <= later.arrival else "downloads queued"] += 1
                expected = _features_from_estimate(env, later) if lab is None else lab.observe(later)
                assert np.array_equal(env.observe(later), expected), (env.k, later)
        action = greedy(env, task, rng)
        if lab is not None:
            lab.step(task, action)
        task, _, _ = env.step(action)
    assert loops["downloads done"] > 0 and loops["downloads queued"] > 0, loops


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_observe_late_returns_a_fresh_writable_float32_array(implementation: str) -> None:
    env = _env(Scenario(n_tasks=60), implementation)
    env.reset(0)
    for task in env.tasks[:50]:
        env.step(BASELINES["Greedy"](env, task, random.Random(0)))
    late = Task(env._downloads_end + 5.0, env.tasks[-1].image, 42.0)  # every download done: the shorter loop
    first, second = env.observe(late), env.observe(late)
    for state in (first, second):
        assert state.dtype == np.float32 and state.shape == (env.n_nodes, env.n_features)
        assert state.flags.writeable and state.flags.c_contiguous and state.base is None
    assert first is not second and not np.shares_memory(first, second)
    first[:] = -1.0  # the caller's own: neither the next result nor the environment sees it
    assert np.array_equal(env.observe(late), second) and not np.array_equal(first, second)
