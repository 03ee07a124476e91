"""The lab track's two sides of a sandboxed episode: the worker's authoritative ``ClusterEnv`` driven one decision at a
time, and the sandbox's replica whose ``TrueView`` the policy gets.

Decision payload: the task, ``[arrival, image, cycles]``. Start message: the episode's nodes, one row each
(``[bandwidth MB/s, GHz, storage MB or null for the cloud's unlimited, slots, is_cloud]``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from layersched.sim.tracks.interface import Policy
from layersched.sim.tracks.layers_v1.catalog import parse_catalog
from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.episode import EpisodeMetrics, check_action, episode_metrics
from layersched.sim.tracks.layers_v1.scenario import CloudNode, NodeRanges, Scenario
from layersched.sim.tracks.layers_v1.view import TrueView
from layersched.sim.tracks.layers_v1.workload import NodeSpec, Task, draw_nodes, draw_tasks


def nodes_to_wire(specs: list[NodeSpec]) -> list[list[Any]]:
    # JSON has no Infinity: the cloud's unlimited storage travels as null.
    return [[s.bandwidth, s.freq, None if s.storage == float("inf") else s.storage, s.slots, s.is_cloud] for s in specs]


def nodes_from_wire(rows: list[list[Any]]) -> list[NodeSpec]:
    return [
        NodeSpec(bandwidth=b, freq=f, storage=float("inf") if s is None else s, slots=k, is_cloud=c)
        for b, f, s, k, c in rows
    ]


def scenario_to_wire(scenario: Scenario) -> dict[str, Any]:
    params = scenario.params()
    params.pop("catalog")
    return {"params": params, "catalog": {"name": scenario.catalog.name, "images": scenario.catalog.to_json()}}


def scenario_from_wire(message: Mapping[str, Any]) -> Scenario:
    p = message["params"]
    cloud = p["cloud"]
    return Scenario(
        catalog=parse_catalog(message["catalog"]["images"], name=message["catalog"]["name"]),
        n_nodes=p["n_nodes"],
        n_tasks=p["n_tasks"],
        arrival_rate=p["arrival_rate"],
        slots=p["slots"],
        nodes=NodeRanges(
            bandwidth_mbps=tuple(p["nodes"]["bandwidth_mbps"]),
            freq_ghz=tuple(p["nodes"]["freq_ghz"]),
            storage_gb=tuple(p["nodes"]["storage_gb"]),
        ),
        cycles_g=tuple(p["cycles_g"]),
        zipf_s=p["zipf_s"],
        cloud=None if cloud is None else CloudNode(**cloud),
    )


class LayersEpisode:
    """One episode on the authoritative ``ClusterEnv``: the nodes are drawn at once, the tasks on first use."""

    def __init__(self, env: ClusterEnv, workload: random.Random) -> None:
        self.env = env
        self._workload = workload
        # What env.reset(rng) does, keeping the node specs to send: the replica learns them, not the workload's rng.
        self._specs = draw_nodes(env.scenario, workload)
        env.start(self._specs)
        self._n_nodes = env.n_nodes
        self.tasks: list[Task] = []
        self.actions: list[int] = []
        self._step = 0

    def start_message(self) -> dict[str, Any]:
        return {"nodes": nodes_to_wire(self._specs)}

    def first_decision(self) -> tuple[float, int, float]:
        tasks = self.tasks = self.env.tasks = draw_tasks(self.env.scenario, self._workload)
        task = tasks[0]
        return (task.arrival, task.image, task.cycles)

    def check(self, value: object, step: int) -> int:
        task = self.tasks[self._step]
        # A plain int of a node that can store the image passes check_action unchanged: tested here without the
        # call (as run_episode does), once per decision; anything else gets check_action's verdict.
        if type(value) is int and 0 <= value < self._n_nodes and self.env._fits[task.image][value]:
            return value
        return check_action(self.env, task, value, step)

    def advance(self, action: int, announce: Callable[[Any], None]) -> bool:
        k = self._step + 1
        more = k < len(self.tasks)
        if more:
            # The next task goes out before this action is applied: the policy has committed to it, and the
            # sandbox's next decision then overlaps with the simulator's step.
            nxt = self.tasks[k]
            announce((nxt.arrival, nxt.image, nxt.cycles))
        self.actions.append(action)
        self.env.step(action)
        self._step = k
        return more

    def metrics(self) -> EpisodeMetrics:
        return episode_metrics(self.env, self.actions, tuple(self.env.completion))


class LayersSimulator:
    def __init__(self, scenario: Scenario) -> None:
        self.env = ClusterEnv(scenario)

    def episode(self, workload: random.Random) -> LayersEpisode:
        return LayersEpisode(self.env, workload)


class LayersReplica:
    """The sandbox's ``ClusterEnv`` replica; the policy gets the ``TrueView`` keeper's view of it, never itself."""

    def __init__(self, scenario: Scenario) -> None:
        self.env = ClusterEnv(scenario)
        self._n_nodes = 0  # known once the episode's nodes are
        self._keeper: TrueView | None = None
        self._task: Task | None = None

    def start(self, message: dict[str, Any]) -> None:
        self.env.start(nodes_from_wire(message["nodes"]))
        self._n_nodes = self.env.n_nodes
        self._keeper = TrueView(self.env)

    def decide(self, policy: Policy, payload: Any, step: int, rng: random.Random) -> object:
        arrival, image, cycles = payload
        task = self._task = Task(float(arrival), int(image), float(cycles))
        keeper = self._keeper
        assert keeper is not None
        keeper.arrive(task, step)
        return policy(keeper.view, task, rng)

    def in_range(self, action: int) -> bool:
        return 0 <= action < self._n_nodes

    def accepted(self, action: int) -> None:
        assert self._keeper is not None and self._task is not None
        self._keeper.place(self._task, action)
