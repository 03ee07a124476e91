"""What the episode loop and the baselines no longer do, and that the results do not notice (issue 16, item 13).

The lab's table (``python -m layersched.sim``) never imports numpy: the simulator imports it on the first call
that returns an array. The MB a node holds of an image (Dep's and LRS's score) come from the simulator, summed
beside each plan: they must be the lab's sum at every step. The episode loop accepts a plain int of a feasible node
without calling ``check_action``: everything else must still get ``check_action``'s verdict.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from layersched.sim.errors import PolicyError
from layersched.sim.tracks.layers_v1.catalog import load_catalog
from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.episode import run_episode
from layersched.sim.tracks.layers_v1.scenario import CloudNode, NodeRanges, Scenario
from layersched.sim.tracks.layers_v1.workload import Task
from tests.sim.table_imports import modules_a_table_imports

SCENARIOS = {
    "lab": Scenario(n_tasks=300),
    "small-nodes-evict": Scenario(n_nodes=4, n_tasks=300, nodes=NodeRanges(storage_gb=(1.6, 3.0))),
    "cloud": Scenario(n_nodes=5, n_tasks=300, cloud=CloudNode()),
    "hub-zero-byte-layers": Scenario(catalog=load_catalog("hub-top70-2023-07"), n_nodes=6, n_tasks=300),
    "too-small-nodes": Scenario(n_nodes=6, n_tasks=300, nodes=NodeRanges(storage_gb=(0.5, 1.6)), zipf_s=0.0),
}


def test_the_baseline_table_never_imports_numpy() -> None:
    assert modules_a_table_imports(["--tasks", "60", "--seeds", "0-1"], ["numpy"]) == []


def _labs_held_mb(env: ClusterEnv, image: int) -> list[float]:
    """The lab baselines' MB cached of an image per node: sum() of the held layers' MB in manifest order."""
    layers = env.images[image]["layers"]
    return [sum(la["size_mb"] for la in layers if la["digest"] in node.layers) for node in env.nodes]


@pytest.mark.parametrize("scenario", list(SCENARIOS.values()), ids=list(SCENARIOS))
def test_held_mb_is_the_labs_sum_at_every_step(scenario: Scenario) -> None:
    env = ClusterEnv(scenario)
    driver = random.Random(11)
    task: Task | None = env.reset(4)
    step = 0
    while task is not None:
        for image in {task.image, driver.randrange(len(env.image_mb))}:
            env._plans_for(image)
            assert env._held_mb[image] == _labs_held_mb(env, image), f"step {step}, image {image}"
        choices = env.feasible_nodes(task) or list(range(env.n_nodes))  # some images fit on no node here
        task, _, _ = env.step(choices[driver.randrange(len(choices))])
        step += 1


def test_mask_is_a_fresh_bool_array_of_the_nodes_that_fit() -> None:
    env = ClusterEnv(SCENARIOS["too-small-nodes"])
    env.reset(0)
    for task in env.tasks[:50]:
        mask = env.mask(task)
        assert mask.dtype == np.bool_ and mask.flags.writeable
        assert mask.tolist() == [env.image_mb[task.image] <= node.storage for node in env.nodes]
        mask[:] = ~mask  # the caller's copy: the next call is not affected
        assert env.mask(task).tolist() == [env.image_mb[task.image] <= node.storage for node in env.nodes]


def _masked_node(env: ClusterEnv, task: Task) -> int:
    return int(np.flatnonzero(~env.mask(task))[0])


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (lambda env, task: True, "step 0: policy returned True of type bool, expected an int node index"),
        (lambda env, task: 1.0, "step 0: policy returned 1.0 of type float, expected an int node index"),
        (lambda env, task: -1, "step 0: policy returned node -1, outside 0..5"),
        (lambda env, task: 6, "step 0: policy returned node 6, outside 0..5"),
        (lambda env, task: _masked_node(env, task), "step 0: policy returned node {node}, which cannot store image"),
    ],
    ids=["bool", "float", "negative", "past-the-last-node", "masked-node"],
)
def test_run_episode_refuses_what_check_action_refuses(reply: object, message: str) -> None:
    env = ClusterEnv(SCENARIOS["too-small-nodes"])
    seed = next(s for s in range(50) if not env.mask(env.reset(s)).all())  # a first task some node cannot store
    first = env.reset(seed)
    node = int(np.flatnonzero(~env.mask(first))[0])
    with pytest.raises(PolicyError) as caught:
        run_episode(env, lambda env, task, rng: reply(env, task), seed, random.Random(0))  # type: ignore[operator]
    assert str(caught.value).startswith(message.format(node=node))


def test_run_episode_takes_numpy_integers_as_check_action_does() -> None:
    env = ClusterEnv(SCENARIOS["lab"])
    as_int = run_episode(env, lambda env, task, rng: env.feasible_nodes(task)[0], 3, random.Random(0))
    as_numpy = run_episode(env, lambda env, task, rng: np.int64(env.feasible_nodes(task)[0]), 3, random.Random(0))
    assert as_numpy == as_int
    assert all(type(action) is int for action in as_numpy.actions)
