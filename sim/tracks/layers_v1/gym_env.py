"""Gymnasium wrapper of the cluster (lab extension 9). Needs the optional ``gymnasium`` package.

Observation: the lab's ``observe()``, shape ``(n_nodes, 6)`` float32. Action: a node index. Reward: minus the
completion time / 100. ``info["action_mask"]`` lists feasible nodes; as in the lab's environment the mask is
advice, not enforced by ``step`` (use it in the policy, as the lab's masked softmax does).
"""

from __future__ import annotations

import random
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.scenario import Scenario
from layersched.sim.tracks.layers_v1.workload import Task

ObsType = npt.NDArray[np.float32]
_BOUND = 1e9


class LayerSchedEnv(gym.Env[ObsType, np.int64]):
    """One episode per ``reset``: ``n_tasks`` placements on ``n_nodes`` nodes (+ the cloud node if configured)."""

    metadata = {"render_modes": []}  # noqa: RUF012  # gymnasium declares it as a class attribute

    def __init__(self, scenario: Scenario | None = None) -> None:
        self.cluster = ClusterEnv(scenario)
        n = self.cluster.scenario.n_nodes + (1 if self.cluster.scenario.cloud is not None else 0)
        # Times and sizes are non-negative; the free-storage share goes below 0 when eviction cannot make room
        # (the lab's soft storage limit). Finite bounds far outside any reachable value keep env_checker content.
        low = np.tile(np.array([0, 0, 0, 0, 0, -_BOUND], dtype=np.float32), (n, 1))
        self.observation_space = spaces.Box(low, np.float32(_BOUND), dtype=np.float32)
        self.action_space: spaces.Discrete = spaces.Discrete(n)
        self.n_actions = n
        self._task: Task | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        super().reset(seed=seed)
        # The workload seed comes from gymnasium's seeded generator, so reset(seed=s) is reproducible.
        workload_seed = int(self.np_random.integers(2**63 - 1))
        self._task = self.cluster.reset(random.Random(workload_seed))
        return self.cluster.observe(self._task), self._info(self._task)

    def step(self, action: np.int64 | int) -> tuple[ObsType, float, bool, bool, dict[str, Any]]:
        if self._task is None:
            raise RuntimeError("call reset() before step()")
        if not self.action_space.contains(int(action)):
            raise ValueError(f"action {action!r} is outside Discrete({self.n_actions})")
        task, reward, done = self.cluster.step(int(action))
        if task is None:
            obs = np.zeros((self.n_actions, ClusterEnv.n_features), dtype=np.float32)
            info: dict[str, Any] = {"action_mask": np.ones(self.n_actions, dtype=np.int8)}
        else:
            obs, info = self.cluster.observe(task), self._info(task)
        self._task = task
        return obs, float(reward), bool(done), False, info

    def _info(self, task: Task) -> dict[str, Any]:
        return {"action_mask": self.cluster.mask(task).astype(np.int8), "task": task}
