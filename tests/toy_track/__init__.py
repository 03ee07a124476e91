"""Track ``toy-v1``, for tests only: online load balancing on identical machines, a few dozen lines of problem.

It proves the track interface is real: nothing in worker/, server/ or sdk/ knows it, yet it runs in both
sandboxes, through the pipeline and onto a leaderboard. Jobs of integer size 1..9 arrive one by one; the policy puts
each on one of ``machines`` machines; the primary metric is the largest load (the makespan). ``policy(loads, size,
rng) -> machine``: ``loads`` is a fresh list each decision (the view is always the truth: writing to it changes
nothing). The reference baseline is Random; LeastLoaded beats it.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from layersched.sim.errors import PolicyError
from layersched.sim.tracks import MetricSpec, Policy
from layersched.sim.tracks.simple_schema import IntegerScenarios
from layersched.sim.version import package_rules_hash


@dataclass(frozen=True)
class ToyScenario:
    machines: int = 3
    jobs: int = 12


@dataclass(frozen=True)
class ToyMetrics:
    makespan: float
    mean_load: float


@dataclass(frozen=True)
class ToyRun:
    actions: tuple[int, ...]
    metrics: ToyMetrics


def random_machine(loads: list[int], size: int, rng: random.Random) -> int:
    return rng.randrange(len(loads))


def least_loaded(loads: list[int], size: int, rng: random.Random) -> int:
    return loads.index(min(loads))


class ToyEpisode:
    def __init__(self, scenario: ToyScenario, workload: random.Random) -> None:
        self.machines = scenario.machines
        self.sizes = [workload.randint(1, 9) for _ in range(scenario.jobs)]
        self.loads = [0] * scenario.machines
        self.step = 0

    def start_message(self) -> dict[str, Any]:
        return {"machines": self.machines}

    def first_decision(self) -> Any:
        return (self.sizes[0],)

    def check(self, value: object, step: int) -> int:
        if type(value) is not int or not 0 <= value < self.machines:
            raise PolicyError(
                f"step {step}: machine {value!r} is not one of 0..{self.machines - 1}", step=step, value=value
            )
        return value

    def advance(self, action: int, announce: Callable[[Any], None]) -> bool:
        self.loads[action] += self.sizes[self.step]
        self.step += 1
        more = self.step < len(self.sizes)
        if more:
            announce((self.sizes[self.step],))
        return more

    def metrics(self) -> ToyMetrics:
        return ToyMetrics(makespan=float(max(self.loads)), mean_load=sum(self.loads) / len(self.loads))


class ToySimulator:
    def __init__(self, scenario: ToyScenario) -> None:
        self.scenario = scenario

    def episode(self, workload: random.Random) -> ToyEpisode:
        return ToyEpisode(self.scenario, workload)


class ToyReplica:
    def __init__(self, scenario: ToyScenario) -> None:
        self.loads: list[int] = []
        self.size = 0

    def start(self, message: dict[str, Any]) -> None:
        self.loads = [0] * message["machines"]

    def decide(self, policy: Policy, payload: Any, step: int, rng: random.Random) -> object:
        (self.size,) = payload
        return policy(list(self.loads), self.size, rng)

    def in_range(self, action: int) -> bool:
        return 0 <= action < len(self.loads)

    def accepted(self, action: int) -> None:
        self.loads[action] += self.size


class ToyTrack(IntegerScenarios):  # its evaluation-set schema: [[scenario]] tables set machines and jobs
    id = "toy-v1"
    title = "Toy load balancing (tests only)"
    contract = "policy(loads, size, rng) -> int: the machine (0..len(loads)-1) that gets the job of this size."
    policy_arguments = "(loads, size, rng)"
    action_description = "an int machine index"
    baseline_names = ("Random", "LeastLoaded")
    reference_baseline = "Random"
    metric_specs = (MetricSpec("makespan", "largest machine load"), MetricSpec("mean_load", "mean machine load"))
    primary_metric = "makespan"
    rules_hash = package_rules_hash(Path(__file__).parent)
    starter = ("tests.toy_track", "starter")
    scenario_type = ToyScenario

    def decisions(self, scenario: ToyScenario) -> int:
        return scenario.jobs

    def baseline(self, name: str) -> Policy:
        return {"Random": random_machine, "LeastLoaded": least_loaded}[name]

    def scenario_hash(self, scenario: ToyScenario) -> str:
        return hashlib.sha256(json.dumps(asdict(scenario), sort_keys=True).encode()).hexdigest()

    def scenario_to_wire(self, scenario: ToyScenario) -> dict[str, Any]:
        return asdict(scenario)

    def scenario_from_wire(self, message: Mapping[str, Any]) -> ToyScenario:
        return ToyScenario(**message)

    def simulator(self, scenario: ToyScenario) -> ToySimulator:
        return ToySimulator(scenario)

    def replica(self, scenario: ToyScenario) -> ToyReplica:
        return ToyReplica(scenario)

    def run_episode(
        self, scenario: ToyScenario, policy: Policy, workload: random.Random, policy_rng: random.Random
    ) -> ToyRun:
        return self._play(ToyEpisode(scenario, workload), policy, policy_rng)

    def run_policies(
        self, scenario: ToyScenario, policies: Sequence[tuple[Policy, random.Random]], workload: random.Random
    ) -> list[ToyRun]:
        drawn = ToyEpisode(scenario, workload)  # once: every policy meets the same jobs
        return [self._play(copy.deepcopy(drawn), policy, policy_rng) for policy, policy_rng in policies]

    def _play(self, episode: ToyEpisode, policy: Policy, policy_rng: random.Random) -> ToyRun:
        actions: list[int] = []
        more = True
        while more:
            action = episode.check(policy(list(episode.loads), episode.sizes[episode.step], policy_rng), len(actions))
            actions.append(action)
            more = episode.advance(action, lambda payload: None)
        return ToyRun(tuple(actions), episode.metrics())

    def check_policy(self, policy: Policy, scenario: ToyScenario) -> None:
        self.run_episode(scenario, policy, random.Random(0), random.Random(0))

    def make_gym_env(self, scenario: ToyScenario | None = None) -> Any:
        raise NotImplementedError("the toy track has no Gymnasium environment")


TRACK = ToyTrack()
