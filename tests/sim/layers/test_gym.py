from __future__ import annotations

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from layersched.sim.tracks.layers_v1.gym_env import LayerSchedEnv  # noqa: E402
from layersched.sim.tracks.layers_v1.scenario import CloudNode, Scenario  # noqa: E402


@pytest.mark.parametrize("cloud", [None, CloudNode()], ids=["edge", "cloud"])
def test_passes_gymnasium_env_checker(cloud: CloudNode | None) -> None:
    env = LayerSchedEnv(Scenario(n_tasks=40, cloud=cloud))
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=1)
    assert obs.shape == (env.action_space.n, 6)
    assert info["action_mask"].shape == (env.action_space.n,)


def test_episode_runs_to_termination_and_is_reproducible() -> None:
    def rollout() -> float:
        env = LayerSchedEnv(Scenario(n_tasks=30))
        obs, info = env.reset(seed=7)
        total, done = 0.0, False
        while not done:
            action = int(np.argmin(obs[:, 4] + (1 - info["action_mask"]) * 1e9))
            obs, reward, done, _truncated, info = env.step(action)
            total += reward
        return total

    assert rollout() == rollout() < 0


def test_step_before_reset_and_bad_action() -> None:
    env = LayerSchedEnv(Scenario(n_tasks=5))
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action 99 is outside Discrete\(10\)"):
        env.step(99)
