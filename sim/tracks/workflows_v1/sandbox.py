"""The two sandbox sides of ``workflows-v1``: the trusted episode (the worker's) and the replica (the sandbox's).

A decision's payload is what changed since the previous one::

    {"t": now,
     "new": [[workflow id, family, arrival, [[cores, memory, priority, [[parent, data]...], [mean per VM]]...]]...],
     "upd": [[workflow id, task index, status, vm, placed, start, finish, ready]...],
     "vms": [[free cores, free memory, [[w, i] running...], [[w, i] queued...]]...],
     "cand": [[w, i]...]}

``new`` holds the workflows that arrived since (never a future one), ``upd`` the tasks whose state changed (a finish
time only once the task has finished: no actual duration before). The replica's ``ViewKeeper`` applies it and builds
the policy a fresh view.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from layersched.sim.tracks.interface import Policy
from layersched.sim.tracks.workflows_v1.env import WorkflowEpisode, WorkflowMetrics
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario
from layersched.sim.tracks.workflows_v1.view import WAIT, ViewKeeper


def payload(episode: WorkflowEpisode, announced: int, *, everything: bool = False) -> dict[str, Any]:
    """The decision's payload after ``announced`` workflows were sent (``everything``: as if none had been, and
    every task of the arrived ones changed: what a fresh keeper needs)."""
    first = 0 if everything else announced
    new = [
        [wf.id, wf.family, wf.arrival, [[t.cores, t.memory_gb, t.priority, [list(p) for p in t.parents], list(m)]
                                         for t, m in zip(wf.tasks, wf.means, strict=True)]]
        for wf in episode.workflows[first : episode.arrived]
        if not (everything and episode.done_at[wf.id] is not None)
    ]  # fmt: skip
    if everything:
        dirty = [g for w in range(episode.arrived) for g in range(episode.offset[w], episode.offset[w + 1])]
    else:
        dirty = sorted(episode.dirty)
    upd = []
    for g in dirty:
        w, i = episode.key[g]
        if everything and episode.done_at[w] is not None:
            continue
        upd.append([w, i, episode.status[g], episode.vm[g], episode.placed[g], episode.start[g],
                    episode.finish[g], episode.ready[g]])  # fmt: skip
    episode.dirty.clear()
    vms = [
        [episode.free_cores[v], episode.free_memory[v], [list(episode.key[g]) for g in episode.running[v]],
         [list(episode.key[g]) for g in episode.queue[v]]]
        for v in range(len(episode.queue))
    ]  # fmt: skip
    return {
        "t": episode.now,
        "new": new,
        "upd": upd,
        "vms": vms,
        "cand": [list(episode.key[g]) for g in episode.candidates],
    }


class WorkflowTrusted:
    """``TrustedEpisode``: the authoritative ``WorkflowEpisode`` and what it has told the replica."""

    def __init__(self, scenario: WorkflowScenario, workload: random.Random) -> None:
        self.episode = WorkflowEpisode(scenario, workload)
        self.announced = 0

    def start_message(self) -> dict[str, Any]:
        return {
            "cluster": self.episode.cluster.to_json(),
            "spread": self.episode.scenario.duration_spread,
        }

    def _payload(self) -> dict[str, Any]:
        out = payload(self.episode, self.announced)
        self.announced = self.episode.arrived
        return out

    def first_decision(self) -> Any:
        return self._payload() if self.episode.first() else None

    def check(self, value: object, step: int) -> int:
        return self.episode.check(value, step)

    def advance(self, action: int, announce: Callable[[Any], None]) -> bool:
        more = self.episode.apply(action)
        if more:
            announce(self._payload())
        return more

    def metrics(self) -> WorkflowMetrics:
        return self.episode.metrics()


class WorkflowSimulator:
    """``TrustedSimulator`` of a scenario."""

    def __init__(self, scenario: WorkflowScenario) -> None:
        self.scenario = scenario

    def episode(self, workload: random.Random) -> WorkflowTrusted:
        return WorkflowTrusted(self.scenario, workload)


class WorkflowReplica:
    """``Replica``: a ``ViewKeeper`` per episode; ``policy(view, candidates, rng)`` gets a fresh view per decision."""

    def __init__(self, scenario: WorkflowScenario) -> None:
        self.n_vms = scenario.n_vms
        self.keeper: ViewKeeper | None = None
        self.limit = 0  # actions below it may be placements (candidates x VMs)

    def start(self, message: dict[str, Any]) -> None:
        self.keeper = ViewKeeper(message)

    def decide(self, policy: Policy, payload: Any, step: int, rng: random.Random) -> object:
        assert self.keeper is not None
        self.keeper.apply(payload)
        self.limit = len(self.keeper.candidates) * self.n_vms
        view = self.keeper.view()
        return policy(view, view.candidates, rng)

    def accepted(self, action: int) -> None:
        return None  # the next payload says what the action changed

    def in_range(self, action: int) -> bool:
        return action == WAIT or 0 <= action < self.limit
