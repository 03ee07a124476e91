"""The schedule of a workflows-v1 episode: where and when each task ran, how long it waited for its inputs and then
for cores and memory on its VM, and when each workflow arrived and completed; built by replaying the accepted
actions on the trusted ``WorkflowEpisode`` (``replay_workflows``) or read off a live one (``schedule_of``: the
Gymnasium env's render).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from layersched.sim.tracks.schedules import actions_left
from layersched.sim.tracks.workflows_v1.env import Cluster, WorkflowEpisode, WorkflowMetrics
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario


@dataclass(frozen=True)
class TaskRecord:
    """One task of an arrived workflow. ``inputs``: when its inputs were all on its VM (None: not yet); the times
    are None for what has not happened yet."""

    workflow: int
    index: int
    cores: int
    memory_gb: float
    vm: int | None
    placed: float | None
    inputs: float | None
    start: float | None
    finish: float | None


@dataclass(frozen=True)
class WorkflowRecord:
    id: int
    family: str
    arrival: float
    tasks: int
    done: float | None

    @property
    def completion(self) -> float | None:
        return None if self.done is None else self.done - self.arrival


@dataclass(frozen=True)
class WorkflowsSchedule:
    """A workflows-v1 episode's schedule (``ScheduleRecord``)."""

    cluster: Cluster
    actions: tuple[int, ...]
    tasks: tuple[TaskRecord, ...]
    workflows: tuple[WorkflowRecord, ...]
    metrics: WorkflowMetrics | None
    time: float

    @property
    def end(self) -> float:
        finishes = [task.finish for task in self.tasks if task.finish is not None]
        return max([self.time, *finishes]) if finishes else self.time

    @property
    def n_vms(self) -> int:
        return len(self.cluster.cores)

    def busy(self, vm: int) -> list[tuple[float, float]]:
        """(time, share of the VM's cores busy) wherever it changes."""
        delta: dict[float, float] = {}
        for task in self.tasks:
            if task.vm == vm and task.start is not None:
                stop = task.finish if task.finish is not None else self.time
                delta[task.start] = delta.get(task.start, 0.0) + task.cores
                delta[stop] = delta.get(stop, 0.0) - task.cores
        out = [(0.0, 0.0)]
        level = 0.0
        for t in sorted(delta):
            level += delta[t]
            out.append((t, max(0.0, level) / self.cluster.cores[vm]))
        return out


def schedule_of(episode: WorkflowEpisode, actions: Sequence[int]) -> WorkflowsSchedule:
    """The schedule of ``episode`` as it stands (its metrics once it has ended), ``actions`` its accepted actions."""
    tasks = tuple(
        TaskRecord(
            workflow=w,
            index=i,
            cores=episode.spec[g].cores,
            memory_gb=episode.spec[g].memory_gb,
            vm=episode.vm[g],
            placed=episode.placed[g],
            inputs=episode.inputs_at[g],
            start=episode.start[g],
            finish=episode.finish[g],
        )
        for g, (w, i) in enumerate(episode.key)
    )
    workflows = tuple(
        WorkflowRecord(wf.id, wf.family, wf.arrival, len(wf.tasks), episode.done_at[wf.id]) for wf in episode.workflows
    )
    ended = len(workflows) == episode.source.count and all(wf.done is not None for wf in workflows)
    return WorkflowsSchedule(
        episode.cluster, tuple(actions), tasks, workflows, episode.metrics() if ended else None, episode.now
    )


def replay_workflows(scenario: WorkflowScenario, workload: random.Random, actions: Sequence[int]) -> WorkflowsSchedule:
    """The schedule of the episode drawn from ``workload`` in which ``actions`` were accepted, played on the trusted
    episode with its own checks (``PolicyError`` when one is refused, or when actions are left after its end)."""
    # The trusted episode itself, without the payloads the sandbox's replica needs (nobody decides here).
    episode = WorkflowEpisode(scenario, workload)
    more = episode.first()
    for step, action in enumerate(actions):
        if not more:
            raise actions_left(step, actions)
        more = episode.apply(episode.check(action, step))
    return schedule_of(episode, actions)
