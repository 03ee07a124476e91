"""Track ``workflows-v1``: DAG workflows on heterogeneous VMs (seed 004), the track interface's object.

Modules: ``vms`` (the VM types), ``families`` (the three workflow families), ``scenario``, ``env`` (the rules and
the authoritative episode), ``view`` (what a policy sees), ``sandbox`` (payloads, trusted side and replica),
``baselines``, ``dag`` and ``heft`` (HEFT as a planner over a static DAG, and its CLI in ``cli``), ``schema`` (the
evaluation-set keys), ``table`` (the baseline table), and the importers of real structures ``wfformat`` and
``alibaba`` (into ``structure.WorkflowStructure``). The rules are in ``env`` and docs/tracks/workflows-v1.md.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from layersched.sim.tracks.interface import MetricSpec, Policy, Track
from layersched.sim.tracks.play import play_episode
from layersched.sim.tracks.workflows_v1.baselines import BASELINES
from layersched.sim.tracks.workflows_v1.env import WorkflowMetrics
from layersched.sim.tracks.workflows_v1.render import WorkflowsViews
from layersched.sim.tracks.workflows_v1.sandbox import WorkflowReplica, WorkflowSimulator, WorkflowTrusted
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario
from layersched.sim.tracks.workflows_v1.schema import WorkflowSchema
from layersched.sim.tracks.workflows_v1.view import WAIT
from layersched.sim.version import package_rules_hash

CONTRACT = f"""\
policy(view, candidates, rng) -> int: one decision. {WAIT} (WAIT) places nothing more now and waits for the next
arrival or finish; view.action(c, v) = c * view.n_vms + v puts the task candidates[c] on VM v.
candidates is view.candidates: the unplaced tasks whose parents are all placed (by workflow, then task index).
view is a WorkflowView of the present, built afresh for each decision (change it as you like): time; vms (type,
cores, memory, speed, bandwidth, free cores and memory, running tasks and queue); workflows, every arrived and
unfinished one with its whole DAG (per task: cores, memory, priority, parents and children with data in GB, the mean
duration on each VM (None: cannot run there), status waiting/queued/running/done, vm, placed, start, finish, ready);
candidates, the unplaced tasks whose parents are all placed; spread, the relative std of actual durations; comm(data,
p, q), the transfer time between VMs. Actual durations are known only once a task has finished; future workflows
are not in the view.
A placed task joins its VM's queue and starts, in queue order, once its inputs are on the VM and its cores and
memory fit. The VM must be able to run the task (view.can_run). WAIT is refused while no task runs or is queued.
Any other reply ends the episode. rng is the episode's random.Random."""


class WorkflowsTrack(WorkflowSchema):
    """The track object ``workflows-v1``."""

    id = "workflows-v1"
    title = "DAG workflows on heterogeneous VMs"
    contract = CONTRACT
    policy_arguments = "(view, candidates, rng)"
    action_description = "an int action (view.action(c, v), or WAIT)"
    baseline_names = tuple(BASELINES)
    reference_baseline = "HEFT"
    metric_specs: tuple[MetricSpec, ...] = (
        MetricSpec("mean_completion", "mean workflow completion time", "s"),
        MetricSpec("p95_completion", "95th percentile workflow completion time", "s"),
        MetricSpec("makespan", "last finish minus first arrival", "s"),
        MetricSpec("cpu_utilisation", "time-averaged share of cores busy"),
        MetricSpec("memory_utilisation", "time-averaged share of memory in use"),
        MetricSpec("weighted_utilisation", "0.375 CPU + 0.625 memory (the seed's weights 0.3 and 0.5)"),
        MetricSpec("sla_violation_rate", "share of tasks finishing 2x their mean duration after ready"),
    )
    primary_metric = "mean_completion"
    rules_hash = package_rules_hash(Path(__file__).parent)
    # start-now EFT as the template, seed 004's GCN (plain torch) and its training recipe: starter/README.md.
    starter = ("layersched.sim.tracks.workflows_v1", "starter")
    # Replays and draws schedules (layersched.sim.tracks.schedules): the pages' and `layersched replay`'s views.
    schedules = WorkflowsViews()

    def baseline(self, name: str) -> Policy:
        try:
            return BASELINES[name]()
        except KeyError:
            raise KeyError(f"unknown baseline {name!r}; known: {', '.join(BASELINES)}") from None

    def decisions(self, scenario: WorkflowScenario) -> None:
        return None  # placements and waits: known only once played

    def scenario_hash(self, scenario: WorkflowScenario) -> str:
        return scenario.content_hash

    def scenario_to_wire(self, scenario: WorkflowScenario) -> dict[str, Any]:
        return scenario.to_json()

    def scenario_from_wire(self, message: Mapping[str, Any]) -> WorkflowScenario:
        return WorkflowScenario.from_json(message)

    def simulator(self, scenario: WorkflowScenario) -> WorkflowSimulator:
        return WorkflowSimulator(scenario)

    def replica(self, scenario: WorkflowScenario) -> WorkflowReplica:
        return WorkflowReplica(scenario)

    def run_episode(
        self, scenario: WorkflowScenario, policy: Policy, workload: random.Random, policy_rng: random.Random
    ) -> WorkflowRun:
        # As the sandbox plays it: the policy sees the replica's view, never the trusted episode.
        actions, metrics = play_episode(self.simulator(scenario), self.replica(scenario), policy, workload, policy_rng)
        return WorkflowRun(tuple(actions), metrics)

    def run_policies(
        self, scenario: WorkflowScenario, policies: Sequence[tuple[Policy, random.Random]], workload: random.Random
    ) -> list[WorkflowRun]:
        drawn = WorkflowTrusted(scenario, workload)
        drawn.episode.draw()  # once: every policy meets the same workflows
        runs = []
        for policy, policy_rng in policies:
            simulator = _Drawn(copy.deepcopy(drawn))
            actions, metrics = play_episode(simulator, self.replica(scenario), policy, random.Random(0), policy_rng)
            runs.append(WorkflowRun(tuple(actions), metrics))
        return runs

    def check_policy(self, policy: Policy, scenario: WorkflowScenario) -> None:
        """The first decisions of the seed-0 episode, played as the sandbox plays them."""
        play_episode(
            self.simulator(scenario),
            self.replica(scenario),
            policy,
            random.Random(0),
            random.Random(0),
            max_decisions=20,
        )

    def make_gym_env(self, scenario: WorkflowScenario | None = None, render_mode: str | None = None) -> Any:
        from layersched.sim.tracks.workflows_v1.gym_env import WorkflowGymEnv  # gymnasium is optional

        return WorkflowGymEnv(scenario, render_mode=render_mode)


class WorkflowRun:
    """An episode played: its accepted actions and its ``WorkflowMetrics``."""

    def __init__(self, actions: tuple[int, ...], metrics: WorkflowMetrics) -> None:
        self.actions = actions
        self.metrics = metrics


class _Drawn:
    """A simulator that hands out one already-drawn episode (``run_policies``)."""

    def __init__(self, episode: WorkflowTrusted) -> None:
        self._episode = episode

    def episode(self, workload: random.Random) -> WorkflowTrusted:
        return self._episode


TRACK: Track = WorkflowsTrack()  # typed, so mypy checks that the class has all of the interface
