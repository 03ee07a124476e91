"""Gymnasium environment of ``workflows-v1``, with a graph observation and an action mask (needs ``gymnasium``).

One decision per ``step``, the track's own decisions, its view built as the sandbox builds it (``ViewKeeper``).

* **Observation** (a ``Dict``): ``nodes`` (``max_tasks`` x 9: status one-hot waiting/queued/running/done, cores / 32,
  memory / 128, priority / 5, mean duration over the VMs / 1000 s, candidate flag) with ``node_mask``; the task
  graph as ``edge_index`` (2 x ``max_edges``, node slots, padded with 0) with ``edge_mask`` and ``edge_data`` (GB /
  20); ``vms`` (n_vms x 6: free cores and memory shares, speed / 1.5, bandwidth / 40 Gbit/s, running and queued
  tasks / 10); ``time`` (s / 10^4). Node slots hold the tasks of the arrived, unfinished workflows in workflow then
  task order; past ``max_tasks`` (or ``max_edges``) the rest are left out of the observation (not of the episode).
* **Action**: ``Discrete(1 + max_candidates * n_vms)``: 0 waits, ``1 + c * n_vms + v`` puts candidate c on VM v.
  ``info["action_mask"]`` (and ``action_masks()``) marks the allowed ones; a masked-out action is replaced by the
  lowest allowed one and ``info["replaced"]`` is True (the track itself would end the episode).
* **Reward**: minus the growth of the summed completion times (each arrived workflow adds the time it has been in the
  system), over 1000 s: the episode's return is exactly minus its workflows' total completion time / 1000, so a
  higher return is a lower mean completion time.
* **Render**: ``render_mode="rgb_array"``: the tasks per VM so far, coloured by workflow (the track's schedule
  record, as the pages draw it; each VM's lane keeps its height, so every frame has one size); ``"ansi"``: each VM's
  busy cores as text, with the schedule's summary.
"""

from __future__ import annotations

import random
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from layersched.sim.tracks.workflows_v1.render import WorkflowsViews
from layersched.sim.tracks.workflows_v1.sandbox import WorkflowTrusted
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario
from layersched.sim.tracks.workflows_v1.schedule import schedule_of
from layersched.sim.tracks.workflows_v1.view import WAIT, ViewKeeper, WorkflowView

N_NODE_FEATURES = 9
N_VM_FEATURES = 6
STATUS = {"waiting": 0, "queued": 1, "running": 2, "done": 3}
Obs = dict[str, npt.NDArray[Any]]
# Finite bounds far beyond any reachable value keep env_checker content (it warns on infinite ones).
_BOUND = 1e9
VIEWS = WorkflowsViews()


class WorkflowGymEnv(gym.Env[Obs, np.int64]):
    """One episode of ``scenario`` per ``reset`` (the workload seeded from gymnasium's generator)."""

    metadata = {"render_modes": ["rgb_array", "ansi"], "render_fps": 4}  # noqa: RUF012  # gymnasium's class attribute

    def __init__(
        self,
        scenario: WorkflowScenario | None = None,
        *,
        max_tasks: int = 512,
        max_edges: int = 2048,
        max_candidates: int = 64,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.render_mode = render_mode
        self._actions: list[int] = []  # the track's accepted actions of the episode (what render replays)
        self.scenario = scenario or WorkflowScenario()
        self.max_tasks, self.max_edges, self.max_candidates = max_tasks, max_edges, max_candidates
        n_vms = self.n_vms = self.scenario.n_vms
        self.spaces = spaces.Dict(
            {
                "nodes": spaces.Box(0.0, _BOUND, (max_tasks, N_NODE_FEATURES), np.float32),
                "node_mask": spaces.MultiBinary(max_tasks),
                "edge_index": spaces.Box(0, max_tasks - 1, (2, max_edges), np.int64),
                "edge_mask": spaces.MultiBinary(max_edges),
                "edge_data": spaces.Box(0.0, _BOUND, (max_edges,), np.float32),
                "vms": spaces.Box(0.0, _BOUND, (n_vms, N_VM_FEATURES), np.float32),
                "time": spaces.Box(0.0, _BOUND, (1,), np.float32),
            }
        )
        # gymnasium types a Dict space as a space of objects, not of our dict of arrays.
        self.observation_space = self.spaces  # type: ignore[assignment]
        self.action_space: spaces.Discrete = spaces.Discrete(1 + max_candidates * n_vms)
        self._trusted: WorkflowTrusted | None = None
        self.workload_seed: int | None = None
        self._view: WorkflowView | None = None
        self._mask = np.zeros(self.action_space.n, dtype=np.int8)
        self._sum = 0.0

    # ------------------------------------------------------------------ the gymnasium API

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Obs, dict[str, Any]]:
        super().reset(seed=seed)
        # From gymnasium's seeded generator, so reset(seed=s) is reproducible; kept to replay the episode elsewhere.
        self.workload_seed = int(self.np_random.integers(2**63 - 1))
        self._trusted = WorkflowTrusted(self.scenario, random.Random(self.workload_seed))
        self._keeper = ViewKeeper(self._trusted.start_message())
        self._actions = []
        payload = self._trusted.first_decision()
        assert payload is not None  # every workflow has a task: there is always a first decision
        self._keeper.apply(payload)
        self._sum = self._completion_sum()
        return self._observe(), self._info(False)

    def step(self, action: np.int64 | int) -> tuple[Obs, float, bool, bool, dict[str, Any]]:
        if self._trusted is None:
            raise RuntimeError("call reset() before step()")
        a = int(action)
        replaced = not (0 <= a < self.action_space.n and self._mask[a])
        if replaced:
            a = int(np.flatnonzero(self._mask)[0])
        track_action = WAIT if a == 0 else a - 1  # the track's numbering, past the WAIT slot
        payloads: list[Any] = []
        checked = self._trusted.check(track_action, len(self._actions))
        self._actions.append(checked)
        more = self._trusted.advance(checked, payloads.append)
        if more:
            self._keeper.apply(payloads[0])
        total = self._completion_sum()
        reward = -(total - self._sum) / 1000.0
        self._sum = total
        if not more:
            self._mask[:] = 0
            self._mask[0] = 1
            return self._empty(), reward, True, False, {"action_mask": self._mask.copy(), "replaced": replaced}
        return self._observe(), reward, False, False, self._info(replaced)

    def render(self) -> Any:
        """The episode so far as ``render_mode`` asks (None without one)."""
        if self.render_mode is None or self._trusted is None:
            return None
        record = schedule_of(self._trusted.episode, self._actions)
        return VIEWS.ansi(record) if self.render_mode == "ansi" else VIEWS.rgb_array(record)

    @property
    def view(self) -> WorkflowView:
        """The track's view of the current decision (what a policy would get: a baseline to imitate reads it)."""
        if self._view is None:
            raise RuntimeError("call reset() before reading the view")
        return self._view

    def action_masks(self) -> npt.NDArray[np.int8]:
        """The allowed actions now (sb3-contrib's MaskablePPO reads this)."""
        mask: npt.NDArray[np.int8] = self._mask.copy()
        return mask

    # ------------------------------------------------------------------ helpers

    def _completion_sum(self) -> float:
        assert self._trusted is not None
        episode = self._trusted.episode
        now = episode.now
        return sum(
            (now if d is None else d) - wf.arrival
            for wf, d in zip(episode.workflows[: episode.arrived], episode.done_at, strict=False)
        )

    def _info(self, replaced: bool) -> dict[str, Any]:
        return {"action_mask": self._mask.copy(), "replaced": replaced}

    def _empty(self) -> Obs:
        obs: Obs = {k: np.zeros(s.shape or (), dtype=s.dtype) for k, s in self.spaces.spaces.items()}
        return obs

    def _observe(self) -> Obs:
        view = self._view = self._keeper.view()
        obs = self._empty()
        slot: dict[tuple[int, int], int] = {}
        nodes = obs["nodes"]
        candidate_keys = {t.key for t in view.candidates}
        for wf in view.workflows.values():
            for t in wf.tasks:
                if len(slot) == self.max_tasks:
                    break
                i = slot[t.key] = len(slot)
                nodes[i, STATUS[t.status]] = 1.0
                allowed = [m for m in t.means if m is not None]
                nodes[i, 4:9] = (
                    t.cores / 32.0,
                    t.memory_gb / 128.0,
                    t.priority / 5.0,
                    sum(allowed) / len(allowed) / 1000.0,
                    1.0 if t.key in candidate_keys else 0.0,
                )
        obs["node_mask"][: len(slot)] = 1
        e = 0
        for wf in view.workflows.values():
            for t in wf.tasks:
                for child, data in t.children:
                    if e == self.max_edges:
                        break
                    u, v = slot.get(t.key), slot.get((wf.id, child))
                    if u is None or v is None:
                        continue
                    obs["edge_index"][:, e] = (u, v)
                    obs["edge_data"][e] = data / 20.0
                    obs["edge_mask"][e] = 1
                    e += 1
        for v, vm in enumerate(view.vms):
            obs["vms"][v] = (
                vm.free_cores / vm.cores,
                vm.free_memory_gb / vm.memory_gb,
                vm.speed / 1.5,
                vm.bandwidth_gbps / 40.0,
                len(vm.running) / 10.0,
                len(vm.queue) / 10.0,
            )
        obs["time"][0] = view.time / 1e4
        self._mask[:] = 0
        self._mask[0] = 1 if any(vm.running or vm.queue for vm in view.vms) else 0
        for c, t in enumerate(view.candidates[: self.max_candidates]):
            for v in range(self.n_vms):
                if view.can_run(t, v):
                    self._mask[1 + c * self.n_vms + v] = 1
        return obs
