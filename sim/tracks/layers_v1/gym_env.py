"""Gymnasium wrapper of the cluster (lab extension 9). Needs the optional ``gymnasium`` package.

Observation: the lab's ``observe()``, shape ``(n_nodes, 6)`` float32. Action: a node index. Reward: minus the
completion time / 100. ``info["action_mask"]`` lists feasible nodes; as in the lab's environment the mask is
advice, not enforced by ``step`` (use it in the policy, as the lab's masked softmax does).

``render_mode="rgb_array"`` renders the episode so far as the pages draw it: a lane per node, each task's wait for
its layers, for a slot and its computing (the track's schedule record; one frame size all episode long); ``"ansi"``
each node's busy slots as text, with the schedule's summary.
"""

from __future__ import annotations

import random
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.render import LayersViews
from layersched.sim.tracks.layers_v1.scenario import Scenario
from layersched.sim.tracks.layers_v1.schedule import LayersRecorder
from layersched.sim.tracks.layers_v1.workload import Task

ObsType = npt.NDArray[np.float32]
_BOUND = 1e9
VIEWS = LayersViews()


class LayerSchedEnv(gym.Env[ObsType, np.int64]):
    """One episode per ``reset``: ``n_tasks`` placements on ``n_nodes`` nodes (+ the cloud node if configured)."""

    metadata = {"render_modes": ["rgb_array", "ansi"], "render_fps": 4}  # noqa: RUF012  # gymnasium's class attribute

    def __init__(self, scenario: Scenario | None = None, render_mode: str | None = None) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.render_mode = render_mode
        self.workload_seed: int | None = None  # the episode's, kept to replay it elsewhere
        self._recorder: LayersRecorder | None = None
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
        workload_seed = self.workload_seed = int(self.np_random.integers(2**63 - 1))
        self._task = self.cluster.reset(random.Random(workload_seed))
        self._recorder = LayersRecorder(self.cluster)
        return self.cluster.observe(self._task), self._info(self._task)

    def step(self, action: np.int64 | int) -> tuple[ObsType, float, bool, bool, dict[str, Any]]:
        if self._task is None:
            raise RuntimeError("call reset() before step()")
        if not self.action_space.contains(int(action)):
            raise ValueError(f"action {action!r} is outside Discrete({self.n_actions})")
        assert self._recorder is not None
        self._recorder.before(self._task, int(action))
        task, reward, done = self.cluster.step(int(action))
        self._recorder.after()
        if task is None:
            obs = np.zeros((self.n_actions, ClusterEnv.n_features), dtype=np.float32)
            info: dict[str, Any] = {"action_mask": np.ones(self.n_actions, dtype=np.int8)}
        else:
            obs, info = self.cluster.observe(task), self._info(task)
        self._task = task
        return obs, float(reward), bool(done), False, info

    def render(self) -> Any:
        """The episode so far as ``render_mode`` asks (None without one)."""
        if self.render_mode is None or self._recorder is None:
            return None
        record = self._recorder.record()
        return VIEWS.ansi(record) if self.render_mode == "ansi" else VIEWS.rgb_array(record)

    def _info(self, task: Task) -> dict[str, Any]:
        return {"action_mask": self.cluster.mask(task).astype(np.int8), "task": task}
