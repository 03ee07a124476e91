"""A toy track for the evaluation-set tests: one machine runs a queue of jobs; the policy picks the next one.

Its scenario is two integers, so it inherits its evaluation-set schema (``IntegerScenarios``); the rest is a few
lines of simulator, two baselines and two metrics. Lower mean flow time is better; first come, first served is the
reference. It runs in-process only: the sandbox's half of the interface (simulator, replica) is not here.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from layersched.sim.errors import PolicyError
from layersched.sim.tracks import MetricSpec, Policy
from layersched.sim.tracks.simple_schema import IntegerScenarios


@dataclass(frozen=True)
class QueueScenario:
    n_jobs: int = 8
    max_duration: int = 9

    def __post_init__(self) -> None:
        if self.n_jobs > 1000:
            raise ValueError(f"n_jobs must be at most 1000, got {self.n_jobs}")


@dataclass(frozen=True)
class QueueMetrics:
    mean_flow: float
    makespan: float


@dataclass(frozen=True)
class QueueRun:
    actions: tuple[int, ...]
    metrics: QueueMetrics


def fifo(durations: Sequence[int], rng: random.Random) -> int:
    return 0


def shortest_first(durations: Sequence[int], rng: random.Random) -> int:
    return min(range(len(durations)), key=durations.__getitem__)


class QueueTrack(IntegerScenarios):
    id = "queue-v1"
    title = "One machine, one queue"
    contract = "policy(durations, rng) -> int: the index of the waiting job to run next."
    scenario_type = QueueScenario
    baseline_names = ("fifo", "shortest-first")
    reference_baseline = "fifo"
    metric_specs = (MetricSpec("mean_flow", "mean flow time", "s"), MetricSpec("makespan", "makespan", "s"))
    primary_metric = "mean_flow"
    starter = ("tests.sim", "toy_starter")

    def baseline(self, name: str) -> Policy:
        return {"fifo": fifo, "shortest-first": shortest_first}[name]

    def run_episode(
        self, scenario: QueueScenario, policy: Policy, workload: random.Random, policy_rng: random.Random
    ) -> QueueRun:
        return self._play(self._draw(scenario, workload), policy, policy_rng)

    def run_policies(
        self, scenario: QueueScenario, policies: Sequence[tuple[Policy, random.Random]], workload: random.Random
    ) -> list[QueueRun]:
        durations = self._draw(scenario, workload)
        return [self._play(durations, policy, rng) for policy, rng in policies]

    def _draw(self, scenario: QueueScenario, workload: random.Random) -> list[int]:
        return [workload.randint(1, scenario.max_duration) for _ in range(scenario.n_jobs)]

    def _play(self, durations: list[int], policy: Policy, rng: random.Random) -> QueueRun:
        waiting, now, flows, actions = list(durations), 0, [], []
        while waiting:
            action = policy(tuple(waiting), rng)
            if type(action) is not int or not 0 <= action < len(waiting):
                raise PolicyError(f"step {len(actions)}: no waiting job {action!r}", step=len(actions), value=action)
            now += waiting.pop(action)
            flows.append(now)
            actions.append(action)
        return QueueRun(tuple(actions), QueueMetrics(sum(flows) / len(flows), float(now)))


TRACK = QueueTrack()
