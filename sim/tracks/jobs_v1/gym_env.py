"""Gymnasium environment of jobs-v1 (``TRACK.make_gym_env``). Needs the optional ``gymnasium`` package.

Observation: DeepRM's image state (``JobsView.observe``), float32 in [0, 1]. Action: ``Discrete(num_nw + 1)``,
slot ``i`` or ``num_nw`` for void. ``info["action_mask"]`` (and ``action_masks()``, the sb3-contrib convention)
marks the allowed actions. Each ``step`` is one decision of the track's episode: the steps at which no job can be
placed pass inside it, and its reward is the sum of DeepRM's rewards (minus the sum of 1/len over the jobs in the
system, per time step) over the time steps it spans. An action the track refuses (a void that would wait for
nothing) ends the episode as the sandbox ends it: ``truncated``, with ``info["invalid_action"]`` naming it.

``reset(seed=N)`` plays the episode ``{ seed = N }`` (the reference's workload of seed N); later resets without a
seed draw their workloads from the generator that seed set.

``render_mode="rgb_array"`` renders the episode so far as DeepRM's occupancy image over the whole episode (the
track's schedule record, as the pages draw it: each job in a colour of its own), ``"ansi"`` as text.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from layersched.sim.episodes import SeededRandom
from layersched.sim.errors import PolicyError
from layersched.sim.tracks.jobs_v1.env import JobsEnv
from layersched.sim.tracks.jobs_v1.render import JobsViews
from layersched.sim.tracks.jobs_v1.sandbox import check_reply
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario
from layersched.sim.tracks.jobs_v1.schedule import JobsRecorder
from layersched.sim.tracks.jobs_v1.view import JobsView, image_width
from layersched.sim.tracks.jobs_v1.workload import SEED_WORDS, JobDraw, RandomState, workload_state

ObsType = npt.NDArray[np.float32]
VIEWS = JobsViews()


class JobsGymEnv(gym.Env[ObsType, np.int64]):
    """One jobs-v1 episode per ``reset``."""

    metadata = {"render_modes": ["rgb_array", "ansi"], "render_fps": 4}  # noqa: RUF012  # gymnasium's class attribute

    def __init__(self, scenario: JobsScenario | None = None, render_mode: str | None = None) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.render_mode = render_mode
        self._recorder: JobsRecorder | None = None
        s = self.scenario = scenario if scenario is not None else JobsScenario()
        self.observation_space = spaces.Box(0.0, 1.0, (s.time_horizon, image_width(s)), dtype=np.float32)
        self.action_space: spaces.Discrete = spaces.Discrete(s.num_nw + 1)
        self._env: JobsEnv | None = None
        self._decisions = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            state = workload_state(SeededRandom(seed))
        else:
            words = self.np_random.integers(1 << 32, size=SEED_WORDS)
            state = RandomState([int(word) for word in words])
        env = self._env = JobsEnv(self.scenario, JobDraw(self.scenario, state))
        self._recorder = JobsRecorder(env)
        self._decisions = 0
        env.settle()
        return self._observe(env)

    def step(self, action: np.int64 | int) -> tuple[ObsType, float, bool, bool, dict[str, Any]]:
        env = self._env
        if env is None:
            raise RuntimeError("call reset() before step()")
        if not self.action_space.contains(int(action)):
            raise ValueError(f"action {action!r} is outside Discrete({self.scenario.num_nw + 1})")
        if env.done:
            raise RuntimeError("the episode has ended: call reset()")
        try:
            checked = check_reply(env, int(action), self._decisions)
        except PolicyError as exc:
            obs, info = self._observe(env)
            return obs, 0.0, False, True, {**info, "invalid_action": str(exc)}
        passed = env.time  # one reward per time step
        self._decisions += 1
        assert self._recorder is not None
        self._recorder.before(checked)
        env.act(checked)
        env.settle()
        obs, info = self._observe(env)
        return obs, float(sum(env.rewards[passed:])), env.done, False, info

    def render(self) -> Any:
        """The episode so far as ``render_mode`` asks (None without one)."""
        if self.render_mode is None or self._recorder is None:
            return None
        record = self._recorder.record()
        return VIEWS.ansi(record) if self.render_mode == "ansi" else VIEWS.rgb_array(record)

    def action_masks(self) -> npt.NDArray[np.bool_]:
        if self._env is None:
            raise RuntimeError("call reset() before action_masks()")
        return np.array(JobsView(self.scenario, self._env.payload()).mask(), dtype=np.bool_)

    def _observe(self, env: JobsEnv) -> tuple[ObsType, dict[str, Any]]:
        view = JobsView(self.scenario, env.payload())
        return view.observe(), {"action_mask": np.array(view.mask(), dtype=np.int8), "time": env.time}
