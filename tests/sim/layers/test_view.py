"""The policy's view (layersched.sim.tracks.layers_v1.view): whatever a policy writes to it, every decision starts from
the truth."""

from __future__ import annotations

import copy
import pickle
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from layersched.sim.tracks.layers_v1.baselines import get_baseline
from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.episode import run_episode
from layersched.sim.tracks.layers_v1.scenario import Scenario
from layersched.sim.tracks.layers_v1.view import TrueView
from layersched.sim.tracks.layers_v1.workload import NodeSpec, Task

SCENARIO = Scenario(n_tasks=120)
greedy = get_baseline("Greedy")


def zero_slots(env: Any, task: Task, action: int) -> None:
    for node in env.nodes:
        node.slots[:] = [0.0] * len(node.slots)
        node.download_free = 0.0


def rebind_nodes(env: Any, task: Task, action: int) -> None:
    env.nodes = [copy.copy(node) for node in reversed(env.nodes)]


def delete_layers(env: Any, task: Task, action: int) -> None:
    for node in env.nodes:
        del node.layers
        break


def lookahead(env: Any, task: Task, action: int) -> None:
    env.place(task, (action + 1) % env.n_nodes)


def private_state(env: Any, task: Task, action: int) -> None:
    env._state[0][1] = 0.0  # the earliest free slot as the hot loops read it
    env._used[1] = 0.0


def feasible(env: Any, task: Task, action: int) -> None:
    env._fits[task.image] = [False] * env.n_nodes  # what check_action and the baselines read
    env._masks[task.image] = np.zeros(env.n_nodes, dtype=bool)  # what mask() copies


CHANGES: dict[str, Callable[[Any, Task, int], None]] = {
    "zeroes-slots": zero_slots,
    "rebinds-nodes": rebind_nodes,
    "deletes-layers": delete_layers,
    "lookahead": lookahead,
    "private-state": private_state,
    "feasible-masks": feasible,
}


def play(change: Callable[[Any, Task, int], None] | None, seed: int = 0) -> tuple[list[int], TrueView]:
    """Greedy through a TrueView on the lab's episode ``seed``, applying ``change`` to the view after each decision."""
    drawn = ClusterEnv(SCENARIO)
    drawn.reset(seed)
    truth = ClusterEnv(SCENARIO)
    truth.start([NodeSpec(n.bandwidth, n.freq, n.storage, len(n.slots), n.is_cloud) for n in drawn.nodes])
    keeper = TrueView(truth)
    rng = random.Random(seed)
    actions = []
    for step, task in enumerate(drawn.tasks):
        keeper.arrive(task, step)
        action = greedy(keeper.view, task, rng)
        if change is not None:
            change(keeper.view, task, action)
        actions.append(action)
        keeper.place(task, action)
    return actions, keeper


def greedy_actions(seed: int = 0) -> list[int]:
    return list(run_episode(ClusterEnv(SCENARIO), greedy, seed, random.Random(seed)).actions)


@pytest.mark.parametrize("change", list(CHANGES.values()), ids=list(CHANGES))
def test_a_changed_view_is_rebuilt_and_the_actions_stay_greedys(change):
    actions, keeper = play(change)
    assert actions == greedy_actions()
    assert keeper.resyncs == SCENARIO.n_tasks


def test_an_untouched_view_is_never_rebuilt():
    actions, keeper = play(None)
    assert actions == greedy_actions()
    assert keeper.resyncs == 0  # reads, and the plan cache observe() and estimate() fill, do not count as writes


def test_writing_to_a_copy_of_the_view_leaves_the_view_alone():
    def scratch(env: Any, task: Task, action: int) -> None:
        mine = copy.deepcopy(env)
        mine.place(task, action)
        mine.nodes[0].slots[0] = 0.0
        nodes = pickle.loads(pickle.dumps(env.nodes))
        nodes[1].layers.clear()

    actions, keeper = play(scratch)
    assert actions == greedy_actions()
    assert keeper.resyncs == 0


def test_a_rebuilt_view_answers_as_the_truth_does():
    _, keeper = play(zero_slots)
    task = Task(keeper.truth.tasks[-1].arrival + 1.0, 3, 2.5)
    view, truth = keeper.view, keeper.truth
    assert view.observe(task).tobytes() == truth.observe(task).tobytes()
    assert view.totals(task) == truth.totals(task)
    assert view.mask(task).tolist() == truth.mask(task).tolist()
    assert [vars(n) for n in view.nodes] == [vars(n) for n in truth.nodes]
    assert view.tasks == truth.tasks and view.completion == truth.completion and view.k == truth.k


def test_the_view_shares_no_mutable_object_with_the_truth():
    _, keeper = play(None)
    view, truth = keeper.view, keeper.truth
    list.__setitem__(view.nodes[0].slots, 0, -1.0)  # around the flag: only the view may change
    dict.clear(view.size)
    with pytest.raises(ValueError, match="read-only"):
        view._masks[0][0] = not view._masks[0][0]
    list.__setitem__(view._held_mb[0], 0, -1.0)
    assert -1.0 not in truth.nodes[0].slots
    assert -1.0 not in truth._held_mb[0]
    assert truth.size
