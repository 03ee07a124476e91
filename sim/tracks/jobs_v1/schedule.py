"""The schedule of a jobs-v1 episode: when each job arrived, was placed, started and finished, which steps it was
held back while it fitted, and how long the queue was; built by replaying the accepted actions on the trusted
``JobsEpisode`` (``replay_jobs``), or kept along a live episode (``JobsRecorder``: the Gymnasium env's render).

A job is *held back* at a step when the policy let time move on (a void) while the job sat in a visible slot and
fitted from that very step for its whole length: DeepRM's analysis of what its agent learnt is which jobs it holds
back to keep room for short ones.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from layersched.sim.tracks.jobs_v1.env import JobsEnv, earliest_offset
from layersched.sim.tracks.jobs_v1.metrics import JobsMetrics, episode_metrics
from layersched.sim.tracks.jobs_v1.sandbox import JobsSimulator
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario
from layersched.sim.tracks.schedules import actions_left


@dataclass(frozen=True)
class JobRecord:
    """One job that arrived: its size, and when it was placed (left the queue), started and finished (None: not
    yet, in an episode replayed only so far); ``held`` the steps it was held back while it fitted."""

    id: int
    arrival: int
    length: int
    demand: tuple[int, ...]
    placed: int | None
    start: int | None
    finish: int | None
    held: tuple[int, ...]
    dropped: bool = False
    placement: int | None = None  # how many jobs were placed before it (the order the machine took them in)

    @property
    def slowdown(self) -> float | None:
        return None if self.finish is None else (self.finish - self.arrival) / self.length


@dataclass(frozen=True)
class JobsSchedule:
    """A jobs-v1 episode's schedule (``ScheduleRecord``): every job that arrived, in arrival order."""

    scenario: JobsScenario
    actions: tuple[int, ...]
    jobs: tuple[JobRecord, ...]
    metrics: JobsMetrics | None
    time: int  # the episode's time when the record was taken (its end, once it has ended)

    @property
    def end(self) -> float:
        finishes = [job.finish for job in self.jobs if job.finish is not None]
        return float(max([self.time, self.scenario.simu_len, *finishes]))

    def waiting(self) -> list[tuple[int, int, int]]:
        """(step, jobs in the visible slots, jobs in the backlog) wherever either changes: jobs that arrived and
        were not placed yet (the slots fill first, and the backlog refills a slot as soon as one is free)."""
        delta: dict[int, int] = {}
        for job in self.jobs:
            if job.dropped:
                continue
            delta[job.arrival] = delta.get(job.arrival, 0) + 1
            if job.placed is not None:
                delta[job.placed] = delta.get(job.placed, 0) - 1
        out: list[tuple[int, int, int]] = [(0, 0, 0)]
        count = 0
        for step in sorted(delta):
            count += delta[step]
            slots = min(count, self.scenario.num_nw)
            point = (step, slots, count - slots)
            if point[1:] != out[-1][1:]:
                out.append(point)
        return out


class JobsRecorder:
    """Keeps what the env does not: each job's placement step and the steps it was held back. Call ``before(action)``
    with each checked action before the env applies it; ``record()`` at any time."""

    def __init__(self, env: JobsEnv) -> None:
        self.env = env
        self.actions: list[int] = []
        self.placed: dict[int, int] = {}
        self.order: dict[int, int] = {}
        self.held: dict[int, list[int]] = {}

    def before(self, action: int) -> None:
        env = self.env
        self.actions.append(action)
        s = env.scenario
        if action < s.num_nw and env.placeable(action):
            job = env.slots[action]
            assert job is not None
            self.placed[job.id] = env.time
            self.order[job.id] = len(self.order)
            return
        units = env.free_units()
        for job in env.slots:
            if job is not None and earliest_offset(units, s.num_res, job.demand, job.length) == 0:
                self.held.setdefault(job.id, []).append(env.time)

    def record(self) -> JobsSchedule:
        env = self.env
        dropped = {job.id for job in env.dropped}
        jobs = tuple(
            JobRecord(
                id=job.id,
                arrival=job.arrival,
                length=job.length,
                demand=job.demand,
                placed=self.placed.get(job.id),
                start=env.start.get(job.id),
                finish=env.finish.get(job.id),
                held=tuple(self.held.get(job.id, ())),
                dropped=job.id in dropped,
                placement=self.order.get(job.id),
            )
            for job in env.jobs
        )
        metrics = episode_metrics(env) if env.done else None
        return JobsSchedule(env.scenario, tuple(self.actions), jobs, metrics, env.time)


def replay_jobs(scenario: JobsScenario, workload: random.Random, actions: Sequence[int]) -> JobsSchedule:
    """The schedule of the episode drawn from ``workload`` in which ``actions`` were accepted, played on the trusted
    episode with its own checks (``PolicyError`` when one is refused, or when actions are left after its end)."""
    episode = JobsSimulator(scenario).episode(workload)
    more = episode.first_decision() is not None
    env = episode.env
    assert env is not None
    recorder = JobsRecorder(env)
    for step, action in enumerate(actions):
        if not more:
            raise actions_left(step, actions)
        checked = episode.check(action, step)
        recorder.before(checked)
        more = episode.advance(checked, _ignore)
    return recorder.record()


def _ignore(_payload: object) -> None:
    return None
