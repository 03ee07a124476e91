"""workflows-v1's Gymnasium environment: check_env, the mask, the return, and a baseline played through it."""

from __future__ import annotations

import random

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from layersched.sim.tracks.workflows_v1 import TRACK
from layersched.sim.tracks.workflows_v1.gym_env import WorkflowGymEnv
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario
from layersched.sim.tracks.workflows_v1.view import WAIT

SMALL = WorkflowScenario(n_workflows=3, arrival_rate=0.01)


def test_check_env_passes():
    check_env(TRACK.make_gym_env(SMALL), skip_render_check=True)


def play(env: WorkflowGymEnv, policy, seed: int):
    obs, info = env.reset(seed=seed)
    total, done, rng = 0.0, False, random.Random(0)
    while not done:
        assert env.observation_space.contains(obs)
        action = policy(env.view, env.view.candidates, rng)
        gym_action = 0 if action == WAIT else 1 + action
        assert info["action_mask"][gym_action] == 1
        obs, reward, done, _, info = env.step(gym_action)
        assert not info["replaced"]
        total += reward
    return total


def test_heft_through_the_env_plays_the_tracks_episode_and_the_return_is_minus_total_completion():
    # Room for every task and candidate of three workflows (HEFT places any candidate, not only the first 64).
    env = WorkflowGymEnv(SMALL, max_tasks=1024, max_edges=4096, max_candidates=512)
    total = play(env, TRACK.baseline("HEFT"), seed=3)
    assert env.workload_seed is not None
    run = TRACK.run_episode(SMALL, TRACK.baseline("HEFT"), random.Random(env.workload_seed), random.Random(0))
    assert env._trusted is not None and env._trusted.episode.metrics() == run.metrics
    # Summed per decision: equal up to rounding.
    assert total == pytest.approx(-run.metrics.mean_completion * SMALL.n_workflows / 1000, rel=1e-12)


def test_a_masked_out_action_is_replaced_by_the_lowest_allowed_one():
    env = WorkflowGymEnv(SMALL)
    _, info = env.reset(seed=0)
    mask = info["action_mask"]
    assert mask[0] == 0  # nothing runs yet: waiting is not allowed
    forbidden = int(np.flatnonzero(mask == 0)[-1])
    _, _, _, _, info = env.step(forbidden)
    assert info["replaced"]
    assert env.view.vms[0].running or env.view.vms[0].queue  # the lowest allowed: candidate 0 on VM 0


def test_the_graph_observation_holds_the_known_dag():
    env = WorkflowGymEnv(SMALL)
    obs, _ = env.reset(seed=1)
    view = env.view
    n_tasks = sum(len(wf.tasks) for wf in view.workflows.values())
    n_edges = sum(len(t.children) for wf in view.workflows.values() for t in wf.tasks)
    assert obs["node_mask"].sum() == n_tasks
    assert obs["edge_mask"].sum() == n_edges
    assert obs["nodes"][:n_tasks, 8].sum() == len(view.candidates)  # the candidate flags
    first = next(iter(view.workflows.values()))
    assert obs["nodes"][0, 4] == first.tasks[0].cores / 32.0
