"""Track ``layers-v1``: the lab's layer-aware container placement (seed 000), in one package like every track.

The modules: ``scenario`` (the cluster and workload parameters, and the rules hash each scenario's hash holds),
``catalog`` (image catalogs: the lab's synthetic one and real registry snapshots, in ``data/``), ``workload`` (the
episode's nodes and tasks), ``env`` (``ClusterEnv``, the lab's model, with observe()'s optional C kernel
``_observe.c``), ``view`` (the policy's view, kept true by ``TrueView``), ``baselines`` (the six baselines) and
``reference_baselines`` (the lab's own transcriptions, which the fast ones must equal), ``episode`` (an in-process
episode and its metrics), ``replay`` (one drawn episode for several policies), ``sandbox`` (how the worker drives the
authoritative ``ClusterEnv`` and the sandbox keeps the policy's view equal to the truth, and how scenarios and nodes
travel), ``schema`` (how its scenarios and catalogs are written in an evaluation-set file), ``table``
(``python -m layersched.sim``), ``gym_env`` (Gymnasium, optional) and ``starter/`` (the student's kit, copied out by
``layersched init``). Here: the track object with its contract, baselines, metrics and starter kit.

The lab's scripts and students' policies import these modules by their paths before the move
(``layersched.sim.env``, ``layersched.sim.baselines``, ...): those still work, as re-exports (tests/sim/layers/
test_old_paths.py).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from layersched.sim.errors import PolicyError
from layersched.sim.tracks.interface import MetricSpec, Policy, ScenarioEntry, Track
from layersched.sim.tracks.layers_v1 import schema
from layersched.sim.tracks.layers_v1.baselines import BASELINES, get_baseline
from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.episode import EpisodeResult, run_episode
from layersched.sim.tracks.layers_v1.render import LayersViews
from layersched.sim.tracks.layers_v1.replay import ReplayEnv
from layersched.sim.tracks.layers_v1.sandbox import LayersReplica, LayersSimulator, scenario_from_wire, scenario_to_wire
from layersched.sim.tracks.layers_v1.scenario import RULES_HASH, Scenario
from layersched.sim.tracks.play import play_episode

CONTRACT = """\
policy(env, task, rng) -> int: the index of the node that runs ``task``.
env is a view of the cluster as it is now (the lab's ClusterEnv API: nodes, images, mask, estimate, observe, ...);
task is the container request (arrival time s, image index, G cycles); rng is the episode's random.Random.
The node must be able to store the task's image (env.mask(task)); any other reply ends the episode.
The view is scratch space: a policy may change it (a lookahead that places tasks on it, say); every decision starts
from the true state again, and scores are computed outside the sandbox. (A policy that reaches past its view into
the sandbox's own objects, by frames or the garbage collector, can mislead only itself.) A policy sees only the
present: the tasks so far and the current one, never a future task or the workload's seed."""


class LayersTrack:
    """The track object ``layers-v1`` (``layersched.sim.tracks.get_track("layers-v1")``)."""

    id = "layers-v1"
    title = "Layer-aware container placement"
    contract = CONTRACT
    policy_arguments = "(env, task, rng)"
    action_description = "an int node index"
    baseline_names = tuple(BASELINES)
    reference_baseline = "Greedy"
    metric_specs: tuple[MetricSpec, ...] = (
        MetricSpec("mean_completion", "mean completion time", "s"),
        MetricSpec("p95_completion", "95th percentile completion time", "s"),
        MetricSpec("cloud_share", "share of tasks on the cloud node"),
    )
    primary_metric = "mean_completion"
    rules_hash = RULES_HASH  # package_rules_hash of this package, computed once beside the scenario hash
    # Greedy as the template, REINFORCE and imitation+RL to train it: starter/README.md.
    starter = ("layersched.sim.tracks.layers_v1", "starter")
    # Replays and draws schedules (layersched.sim.tracks.schedules): the pages' and `layersched replay`'s views.
    schedules = LayersViews()

    scenario_keys = schema.SCENARIO_KEYS
    evalset_tables = schema.TABLES

    def read_tables(self, tables: Mapping[str, Any], *, base_dir: Path) -> schema.FileCatalogs:
        return schema.read_tables(tables, base_dir=base_dir)

    def parse_scenario(
        self, table: Mapping[str, Any], where: str, context: schema.FileCatalogs
    ) -> tuple[Scenario, schema.CatalogSource]:
        return schema.parse_scenario(table, where, context)

    def check_scenarios(self, scenarios: Sequence[ScenarioEntry]) -> None:
        schema.check_scenarios(scenarios)

    def secret_keys(self, scenario: ScenarioEntry) -> Iterable[tuple[bytes, str]]:
        return schema.secret_keys(scenario)

    def scenario_canonical(self, scenario: ScenarioEntry, *, public: bool) -> dict[str, Any]:
        return schema.scenario_canonical(scenario, public=public)

    def tables_canonical(self, scenarios: Sequence[ScenarioEntry], *, public: bool) -> dict[str, Any]:
        return schema.tables_canonical(scenarios, public=public)

    def dump_scenario(self, scenario: ScenarioEntry) -> dict[str, Any]:
        return schema.dump_scenario(scenario)

    def dump_tables(
        self, scenarios: Sequence[ScenarioEntry], *, relocate: Callable[[str], str]
    ) -> dict[str, dict[str, dict[str, Any]]]:
        return schema.dump_tables(scenarios, relocate=relocate)

    def decisions(self, scenario: Scenario) -> int:
        return scenario.n_tasks  # one placement per task

    def baseline(self, name: str) -> Policy:
        return get_baseline(name)

    def scenario_hash(self, scenario: Scenario) -> str:
        return scenario.content_hash

    def scenario_to_wire(self, scenario: Scenario) -> dict[str, Any]:
        return scenario_to_wire(scenario)

    def scenario_from_wire(self, message: Mapping[str, Any]) -> Scenario:
        return scenario_from_wire(message)

    def simulator(self, scenario: Scenario) -> LayersSimulator:
        return LayersSimulator(scenario)

    def replica(self, scenario: Scenario) -> LayersReplica:
        return LayersReplica(scenario)

    def run_episode(
        self, scenario: Scenario, policy: Policy, workload: random.Random, policy_rng: random.Random
    ) -> EpisodeResult:
        return run_episode(ClusterEnv(scenario), policy, workload, policy_rng)

    def run_policies(
        self, scenario: Scenario, policies: Sequence[tuple[Policy, random.Random]], workload: random.Random
    ) -> list[EpisodeResult]:
        # Drawing a keyed episode costs about a sixth of a baseline's run: the first policy draws it, the others
        # replay it.
        env = ReplayEnv(scenario)
        return [run_episode(env, policy, workload, policy_rng) for policy, policy_rng in policies]

    def check_policy(self, policy: Policy, scenario: Scenario) -> None:
        """The first decisions of the seed-0 episode, played as the sandbox plays them (``play_episode``); a float
        reply gets its own hint, the rest the trusted check's verdict."""

        steps = iter(range(1 << 62))  # the step of each call (the view's env.k is the policy's to change)

        def no_floats(env: Any, task: Any, rng: random.Random) -> Any:
            step, reply = next(steps), policy(env, task, rng)
            if isinstance(reply, float):
                raise PolicyError(
                    f"step {step}: policy returned {reply!r} (float); return an int node index such as "
                    "int(np.argmax(scores))",
                    step=step,
                    value=reply,
                )
            return reply

        simulator, replica = self.simulator(scenario), self.replica(scenario)
        play_episode(simulator, replica, no_floats, random.Random(0), random.Random(0), max_decisions=5)

    def make_gym_env(self, scenario: Scenario | None = None, render_mode: str | None = None) -> Any:
        from layersched.sim.tracks.layers_v1.gym_env import LayerSchedEnv  # gymnasium is optional

        return LayerSchedEnv(scenario, render_mode=render_mode)


TRACK: Track = LayersTrack()  # typed, so mypy checks that the class has all of the interface
