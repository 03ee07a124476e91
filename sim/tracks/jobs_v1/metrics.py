"""The metrics of a finished jobs-v1 episode.

Every job that entered has finished when an episode ends (an episode runs until they have), so the means are over
all of them; arrivals dropped at a full backlog never entered and are counted apart. An episode in which no job
entered has mean slowdown 1.0 (no job waited) and mean completion 0.0.
"""

from __future__ import annotations

from dataclasses import dataclass

from layersched.sim.float_sum import left_sum
from layersched.sim.tracks.interface import MetricSpec
from layersched.sim.tracks.jobs_v1.env import JobsEnv

METRIC_SPECS = (
    MetricSpec("mean_slowdown", "mean slowdown ((finish - arrival) / length)"),
    MetricSpec("mean_completion", "mean completion time (finish - arrival)", "steps"),
    MetricSpec("utilisation_1", "utilisation of resource 1"),
    MetricSpec("utilisation_2", "utilisation of resource 2"),
    MetricSpec("jobs_dropped", "arrivals dropped at a full backlog", "jobs"),
)


@dataclass(frozen=True)
class JobsMetrics:
    mean_slowdown: float
    mean_completion: float
    # Work done over capacity from step 0 to the episode's end (the last finish, or simu_len if later).
    utilisation_1: float
    utilisation_2: float
    jobs_dropped: float


def episode_metrics(env: JobsEnv) -> JobsMetrics:
    """The record of ``env``'s episode, which must have ended."""
    if not env.done:
        raise ValueError(f"the episode has not ended (time {env.time}): its metrics are not known yet")
    s, jobs = env.scenario, env.entered
    completion = [env.finish[job.id] - job.arrival for job in jobs]
    slowdown = [c / job.length for c, job in zip(completion, jobs, strict=True)]
    end = max([s.simu_len, *env.finish.values()])
    work = [sum(job.length * job.demand[r] for job in jobs) / (s.res_slot * end) for r in range(s.num_res)]
    return JobsMetrics(
        mean_slowdown=left_sum(slowdown) / len(jobs) if jobs else 1.0,  # the same float on every Python
        mean_completion=sum(completion) / len(jobs) if jobs else 0.0,
        utilisation_1=work[0],
        utilisation_2=work[1],
        jobs_dropped=float(len(env.dropped)),
    )
