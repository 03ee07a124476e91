"""observe()'s C kernel (sim/tracks/layers_v1/_observe.c) against observe()'s Python loop, bit for bit, and the cases it
declines.

The Python loop is the kernel's definition (and is itself checked against the lab model in test_lab_differential.py
and test_observe_fast.py), so here the two are compared on the same plans: in whole episodes under every policy
kind the differential test uses, on tasks at any time against each state, and on arbitrary plan values. Results are
compared as bytes, which also tells -0.0 from 0.0.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layersched.sim.tracks.layers_v1.baselines import BASELINES
from layersched.sim.tracks.layers_v1.catalog import load_catalog
from layersched.sim.tracks.layers_v1.env import ClusterEnv, Plan
from layersched.sim.tracks.layers_v1.scenario import CloudNode, Scenario
from layersched.sim.tracks.layers_v1.workload import NodeSpec, Task
from tests.sim.layers.test_lab_differential import SCENARIOS as DIFFERENTIAL_SCENARIOS

kernel = ClusterEnv.observe_kernel


def test_the_kernel_is_built() -> None:
    # Without it observe() is still right, only slower; the benchmark's 10x needs it, so a machine that runs the
    # tests must have built it (scripts/bootstrap installs with gcc and the Python headers).
    assert kernel is not None, (
        "sim/tracks/layers_v1/_observe.c was not compiled: reinstall with `pip install -e .` and a C compiler"
    )


def _kernel_rows(env: ClusterEnv, task: Task) -> bytes:
    """What the kernel writes for ``task``; it must take the case (return True), not leave it to Python."""
    assert kernel is not None
    out = np.full((env.n_nodes, env.n_features), np.nan, np.float32)
    assert kernel(env._plans_for(task.image), task.arrival, task.cycles, out) is True, task
    return out.tobytes()


def _python_rows(env: ClusterEnv, task: Task) -> bytes:
    env.observe_kernel = None
    try:
        return env.observe(task).tobytes()
    finally:
        del env.observe_kernel  # the class's kernel again


SCENARIOS = {
    **DIFFERENTIAL_SCENARIOS,
    "with-cloud": Scenario(n_tasks=300, arrival_rate=0.5, cloud=CloudNode()),
    "twenty-nodes": Scenario(n_nodes=20, n_tasks=300),
    # Zero-byte layers (increments and missing MB of 0.0 with digests still missing) beside a node that never caches.
    "hub-with-cloud": Scenario(catalog=load_catalog("hub-top70-2023-07"), n_nodes=4, n_tasks=200, cloud=CloudNode()),
}


@pytest.mark.parametrize("policy", ["Greedy", "random"])
@pytest.mark.parametrize("scenario", list(SCENARIOS.values()), ids=list(SCENARIOS))
def test_the_kernel_gives_the_python_loops_bits_in_whole_episodes(scenario: Scenario, policy: str) -> None:
    env = ClusterEnv(scenario)
    task: Task | None = env.reset(11)
    rng, probe = random.Random(11), random.Random(12)
    loops = {"downloads done": 0, "downloads queued": 0}
    while task is not None:
        probes = [task]
        if env.k % 20 == 0:  # tasks before, at and after the end of every queue, and the remaining ones
            ends = [task.arrival, env._downloads_end, *(node.download_free for node in env.nodes)]
            probes += [
                Task(t + d, probe.randrange(len(env.images)), probe.uniform(20, 80))
                for t in ends
                for d in (-50.0, -1e-9, 0.0, 1e-9, 25.0)
            ]
            probes += env.tasks[env.k + 1 :]
        for later in probes:
            loops["downloads done" if env._downloads_end <= later.arrival else "downloads queued"] += 1
            assert _kernel_rows(env, later) == _python_rows(env, later), (env.k, later)
        action = BASELINES["Greedy"](env, task, rng) if policy == "Greedy" else rng.randrange(env.n_nodes)
        task, _, _ = env.step(action)
    assert loops["downloads done"] > 0 and loops["downloads queued"] > 0, loops


def _env_with_plans(plans: list[Plan]) -> ClusterEnv:
    """An environment whose plans for image 0 are ``plans``, one per node, and whose queues may still be busy (so
    observe()'s Python loop takes its general form, which holds for any plan)."""
    env = ClusterEnv(Scenario(n_nodes=len(plans), n_tasks=1))
    env.reset(0)
    env._plans[0] = list(plans)
    env._stale[0] = []
    env._downloads_end = math.inf
    return env


times = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False) | st.sampled_from([0.0, -0.0])
states = st.lists(
    st.tuples(
        times | st.just(math.nan),  # download queue free
        times | st.just(math.nan),  # earliest free slot
        st.floats(min_value=1e-3, max_value=100.0),  # CPU frequency
        st.floats(min_value=-5.0, max_value=1.0),  # free-storage share (negative past a soft eviction)
    ).map(list),
    min_size=1,
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(
    states=states,
    data=st.data(),
    now=times,
    cycles=st.floats(min_value=0.0, max_value=1e4),
)
def test_the_kernel_gives_the_python_loops_bits_on_any_plan(
    states: list[list[float]], data: st.DataObject, now: float, cycles: float
) -> None:
    plans: list[Plan] = []
    for state in states:
        latest = data.draw(times | st.sampled_from([-math.inf, math.nan]))  # -inf: no cached layer (ABSENT)
        increments = data.draw(st.lists(st.floats(min_value=0.0, max_value=1e4), max_size=8).map(tuple))
        missing_gb = data.draw(st.floats(min_value=0.0, max_value=100.0))
        plans.append((latest, increments, missing_gb * 1000, missing_gb, ("d",) * len(increments), state))
    env = _env_with_plans(plans)
    task = Task(now, 0, cycles)
    assert _kernel_rows(env, task) == _python_rows(env, task)


# A time whose ulp (2**-12 s) is coarse enough that the order of additions shows even after the cast to float32: each
# case below gives a different float32 in some feature if an expression is reassociated (start - now + compute, the
# queue's total added at once, ...). Random plans of ordinary magnitudes almost never tell those apart.
BIG = 2.0**40


@pytest.mark.parametrize(
    ("latest", "increments", "queue", "slot_free"),
    [
        (-math.inf, (), 0.0, BIG + 1.0),  # waits for a slot: wait and total from slot_free
        (-math.inf, (), 0.0, 0.0),  # nothing missing, slot free: total is (now + compute - now)
        (-math.inf, (0.3, 0.7, 0.1), BIG + 0.1, 0.0),  # queue busy past now: the fold starts there
        (-math.inf, (0.3, 0.7, 0.1), 0.0, BIG + 1.3),  # queue idle: the fold starts at now, then a slot wait
        (BIG + 5.3, (0.3,), 0.0, BIG + 5.0),  # a cached layer still arriving after the missing one
        (BIG + 0.7, (), 0.0, 0.0),  # nothing missing, a cached layer still arriving
    ],
    ids=["slot-wait", "idle", "busy-queue", "fold-then-wait", "cached-later", "cached-arriving"],
)
def test_the_kernel_adds_in_the_labs_order_where_rounding_shows(
    latest: float, increments: tuple[float, ...], queue: float, slot_free: float
) -> None:
    state = [queue, slot_free, 1.0, 0.5]
    env = _env_with_plans([(latest, increments, 1.1, 0.0011, ("d",) * len(increments), state)])
    task = Task(BIG, 0, 0.3)
    assert _kernel_rows(env, task) == _python_rows(env, task)


def _one_node_env(freq: float) -> ClusterEnv:
    env = ClusterEnv(Scenario(n_nodes=1, n_tasks=1))
    env.start([NodeSpec(bandwidth=100.0, freq=freq, storage=1e6, slots=2)])
    return env


def test_the_kernel_leaves_ints_to_python_which_computes_them_as_the_lab_does() -> None:
    # A hand-made NodeSpec or Task may carry ints; Python's int/float arithmetic is the definition there.
    assert kernel is not None
    env = _one_node_env(freq=2)  # int frequency
    task = Task(10.0, 0, 50.0)
    out = np.empty((1, 6), np.float32)
    assert kernel(env._plans_for(0), task.arrival, task.cycles, out) is False
    assert env.observe(task).tobytes() == _python_rows(env, task)
    assert env.observe(task)[0, 3] == np.float32(50.0 / 2 / 100)
    float_env = _one_node_env(freq=2.0)
    int_cycles = Task(10, 0, 50)  # int arrival and cycles
    assert kernel(float_env._plans_for(0), int_cycles.arrival, int_cycles.cycles, out) is False
    assert float_env.observe(int_cycles).tobytes() == float_env.observe(Task(10.0, 0, 50.0)).tobytes()


def test_a_zero_frequency_raises_as_in_python_instead_of_giving_infinity() -> None:
    env = _one_node_env(freq=0.0)
    with pytest.raises(ZeroDivisionError):
        env.observe(Task(10.0, 0, 50.0))
    env.observe_kernel = None
    with pytest.raises(ZeroDivisionError):
        env.observe(Task(10.0, 0, 50.0))


def test_a_tampered_plan_is_left_to_python_and_fails_there() -> None:
    assert kernel is not None
    env = _one_node_env(freq=2.0)
    env._plans_for(0)[0] = ("not", "a", "plan")  # type: ignore[call-overload]  # a policy meddling with internals
    assert kernel(env._plans[0], 10.0, 50.0, np.empty((1, 6), np.float32)) is False
    with pytest.raises(ValueError, match="not enough values to unpack"):
        env.observe(Task(10.0, 0, 50.0))


@pytest.mark.parametrize(
    ("out", "error", "message"),
    [
        (np.empty((1, 6), np.float64), ValueError, "out must hold 6 float32 .* got 48 bytes of format d"),
        (np.empty((2, 6), np.float32), ValueError, "out must hold 6 float32 .* got 48 bytes of format f"),
        (np.empty((1, 12), np.float32)[:, ::2], ValueError, "not C-contiguous"),
        (bytes(24), BufferError, "not writable"),
    ],
    ids=["float64", "two-rows", "strided", "read-only"],
)
def test_the_kernel_refuses_an_output_it_cannot_fill(out: object, error: type[Exception], message: str) -> None:
    assert kernel is not None
    env = _one_node_env(freq=2.0)
    with pytest.raises(error, match=message):
        kernel(env._plans_for(0), 10.0, 50.0, out)


def test_the_kernel_names_its_arguments_when_called_wrongly() -> None:
    assert kernel is not None
    with pytest.raises(TypeError, match=r"fill_observation\(plans, now, cycles, out\) takes 4 arguments, got 2"):
        kernel([], 1.0)  # type: ignore[call-arg]
