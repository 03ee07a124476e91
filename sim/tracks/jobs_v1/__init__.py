"""Track ``jobs-v1``: online multi-resource job scheduling after DeepRM (Mao et al., HotNets 2016; seed 002).

Jobs arrive over ``simu_len`` steps at one machine of ``num_res`` resources; each step the policy places visible
jobs (reserving each at its earliest start within the horizon) or lets time move on; an episode runs until every
job has finished. The primary metric is the mean slowdown, scored as a ratio to SJF's (the expert DeepRM_Plus
imitates). The modules: ``scenario`` (the cluster and arrival process), ``workload`` (the reference's job sequence),
``env`` (the dynamics), ``view`` (what a policy sees), ``baselines``, ``metrics``, ``sandbox`` (the worker's and the
sandbox's sides), ``table`` (``python -m layersched.sim --track jobs-v1``), ``gym_env`` (Gymnasium, optional) and
``starter/`` (the student's kit, copied out by ``layersched init --track jobs-v1``). Every decision on a quirk of the
reference is written in docs/tracks/jobs-v1.md.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from layersched.sim.episodes import SeededRandom
from layersched.sim.errors import PolicyError
from layersched.sim.tracks.interface import MetricSpec, Policy, Track
from layersched.sim.tracks.jobs_v1.baselines import BASELINES
from layersched.sim.tracks.jobs_v1.metrics import METRIC_SPECS, JobsMetrics
from layersched.sim.tracks.jobs_v1.render import JobsViews
from layersched.sim.tracks.jobs_v1.sandbox import DrawnSimulator, JobsReplica, JobsSimulator
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario
from layersched.sim.tracks.jobs_v1.workload import draw_jobs, workload_state
from layersched.sim.tracks.play import play_episode
from layersched.sim.tracks.simple_schema import IntegerScenarios
from layersched.sim.version import package_rules_hash

CONTRACT = """\
policy(env, rng) -> int | None: the slot (0..num_nw-1) of the visible job to place, or None to let time move on.
env is the present state, built afresh for each decision (a policy may write to it freely):
  env.time               the current step
  env.free               numpy int array (time_horizon, num_res): units free t steps from now, after every
                         placed job's reservation; env.used is res_slot - free
  env.slots              num_nw entries, each None or a VisibleJob(length, arrival, demand)
  env.backlog            how many jobs wait behind the slots (their sizes are not shown, as in DeepRM)
  env.since_new_job      steps since the last arrival (capped at max_track_since_new)
  env.scenario           the JobsScenario (sizes, horizon, simu_len, new_job_rate)
  env.free_units()       free flattened step by step, as ints; env.free_row(t) is free[t] as a list of ints
  env.fits_now(i), env.start_offset(i), env.mask(), env.void_allowed()   (after writes to env.free, of that)
  env.observe()          DeepRM's image state: float32 (time_horizon, width)
rng is the episode's random.Random. Placing slot i reserves its job at the earliest offset within the horizon at
which it fits for its whole length; several placements may happen within one step. None (or num_nw, DeepRM's void
action), an empty slot and a job that fits nowhere all let time move on one step. You are asked only when some
visible job can be placed. After the last arrival step, with nothing running, a void is refused (it would wait for
nothing): place a job. Anything but an int slot, None or num_nw ends the episode. The view shows the present only:
no future arrival, nothing of the workload's seed."""


@dataclass(frozen=True)
class JobsRun:
    actions: tuple[int, ...]
    metrics: JobsMetrics


class JobsTrack(IntegerScenarios):
    """The track object ``jobs-v1`` (``layersched.sim.tracks.get_track("jobs-v1")``)."""

    id = "jobs-v1"
    title = "Online multi-resource job scheduling (DeepRM)"
    contract = CONTRACT
    policy_arguments = "(env, rng)"
    action_description = "an int slot index or None"
    baseline_names = tuple(BASELINES)
    reference_baseline = "SJF"
    metric_specs: tuple[MetricSpec, ...] = METRIC_SPECS
    primary_metric = "mean_slowdown"
    rules_hash = package_rules_hash(Path(__file__).parent)
    # SJF as the template, and DeepRM_Plus's recipe (train.py: behaviour cloning of SJF, then policy gradient).
    starter = ("layersched.sim.tracks.jobs_v1", "starter")
    scenario_type = JobsScenario
    # Replays and draws schedules (layersched.sim.tracks.schedules): the pages' and `layersched replay`'s views.
    schedules = JobsViews()
    # As IntegerScenarios computes it, but a class attribute, as the Track protocol declares it.
    scenario_keys = frozenset(f.name for f in fields(JobsScenario))

    def baseline(self, name: str) -> Policy:
        try:
            return BASELINES[name]
        except KeyError:
            raise KeyError(f"unknown jobs-v1 baseline {name!r}; known: {', '.join(BASELINES)}") from None

    def decisions(self, scenario: JobsScenario) -> int | None:
        return None  # as many as the policy makes: not known before the episode runs

    def simulator(self, scenario: JobsScenario) -> JobsSimulator:
        return JobsSimulator(scenario)

    def replica(self, scenario: JobsScenario) -> JobsReplica:
        return JobsReplica(scenario)

    def run_episode(
        self, scenario: JobsScenario, policy: Policy, workload: random.Random, policy_rng: random.Random
    ) -> JobsRun:
        # Played as the sandbox plays it, so the in-process run is the sandboxed run.
        actions, metrics = play_episode(self.simulator(scenario), self.replica(scenario), policy, workload, policy_rng)
        return JobsRun(tuple(actions), metrics)

    def run_policies(
        self, scenario: JobsScenario, policies: Sequence[tuple[Policy, random.Random]], workload: random.Random
    ) -> list[JobsRun]:
        drawn = DrawnSimulator(scenario, draw_jobs(scenario, workload_state(workload)))
        runs = []
        for policy, policy_rng in policies:
            actions, metrics = play_episode(drawn, self.replica(scenario), policy, workload, policy_rng)
            runs.append(JobsRun(tuple(actions), metrics))
        return runs

    def check_policy(self, policy: Policy, scenario: JobsScenario) -> None:
        """The first decisions of the seed-0 episode, played as the sandbox plays them; a float reply gets a hint."""
        steps = iter(range(1 << 62))

        def no_floats(env: Any, rng: random.Random) -> Any:
            step, reply = next(steps), policy(env, rng)
            if isinstance(reply, float):
                raise PolicyError(
                    f"step {step}: policy returned {reply!r} (float); return an int slot such as "
                    "int(np.argmax(scores)), or None for void",
                    step=step,
                    value=reply,
                )
            return reply

        play_episode(
            self.simulator(scenario),
            self.replica(scenario),
            no_floats,
            SeededRandom(0),
            random.Random(0),
            max_decisions=5,
        )

    def make_gym_env(self, scenario: JobsScenario | None = None, render_mode: str | None = None) -> Any:
        from layersched.sim.tracks.jobs_v1.gym_env import JobsGymEnv  # gymnasium is optional

        return JobsGymEnv(scenario, render_mode=render_mode)


TRACK: Track = JobsTrack()  # typed, so mypy checks that the class has all of the interface
