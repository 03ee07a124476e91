"""Running one episode in-process, and what an episode's result holds.

The sandbox runner (``layersched.worker``) drives the same ``ClusterEnv`` step by step with actions from an
untrusted process; this module is the trusted in-process path used for baselines, local validation and tests.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from layersched.sim.episodes import trace_hash
from layersched.sim.errors import PolicyError
from layersched.sim.tracks.layers_v1.baselines import Policy
from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.workload import Task


@dataclass(frozen=True)
class EpisodeMetrics:
    """The lab's metric (mean completion time) plus the tail and the cloud's share."""

    mean_completion: float
    p95_completion: float
    cloud_share: float
    n_tasks: int


@dataclass(frozen=True)
class EpisodeResult:
    actions: tuple[int, ...]
    completions: tuple[float, ...]
    metrics: EpisodeMetrics

    @property
    def trace_hash(self) -> str:
        return trace_hash(self.actions)


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default), kept in pure Python for the harness."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def episode_metrics(env: ClusterEnv, actions: Sequence[int], completions: Sequence[float]) -> EpisodeMetrics:
    cloud = {n for n, node in enumerate(env.nodes) if node.is_cloud}
    return EpisodeMetrics(
        mean_completion=sum(completions) / len(completions),
        p95_completion=percentile(completions, 95),
        cloud_share=sum(a in cloud for a in actions) / len(actions),
        n_tasks=len(completions),
    )


def check_action(env: ClusterEnv, task: Task, action: object, step: int) -> int:
    """Validate a policy's reply: an int (not bool), in range, allowed by the mask. Raises ``PolicyError``."""
    if isinstance(action, bool) or not isinstance(action, int):
        # numpy integers are accepted in-process; anything else (floats, None, strings) is not.
        if hasattr(action, "__index__") and not isinstance(action, bool):
            action = action.__index__()
        else:
            raise PolicyError(
                f"step {step}: policy returned {action!r} of type {type(action).__name__}, expected an int node index",
                step=step,
                value=action,
            )
    assert isinstance(action, int)
    if not 0 <= action < env.n_nodes:
        raise PolicyError(
            f"step {step}: policy returned node {action}, outside 0..{env.n_nodes - 1}", step=step, value=action
        )
    if not env._fits[task.image][action]:  # env.mask(task)[action] without building and copying an array
        raise PolicyError(
            f"step {step}: policy returned node {action}, which cannot store image {task.image} "
            f"({env.image_mb[task.image]:.1f} MB > {env.nodes[action].storage:.1f} MB)",
            step=step,
            value=action,
        )
    return action


def run_episode(
    env: ClusterEnv, policy: Policy, workload: int | random.Random, policy_rng: random.Random
) -> EpisodeResult:
    """Reset ``env`` from ``workload`` and let ``policy`` place every task. Invalid actions raise ``PolicyError``."""
    task: Task | None = env.reset(workload)
    actions: list[int] = []
    n_nodes = env.n_nodes
    done = False
    while not done:
        assert task is not None
        action = policy(env, task, policy_rng)
        # A plain int of a node that can store the image passes check_action unchanged: tested here without the
        # call, which cost about a tenth of a baseline's step; anything else gets check_action's verdict.
        if type(action) is not int or not (0 <= action < n_nodes and env._fits[task.image][action]):
            action = check_action(env, task, action, len(actions))
        actions.append(action)
        task, _, done = env.step(action)
    completions = tuple(env.completion)
    return EpisodeResult(tuple(actions), completions, episode_metrics(env, actions, completions))


def run_lab_baseline(env: ClusterEnv, policy: Policy, seed: int) -> float:
    """The lab's ``run_baseline``: workload and tie-breaking both seeded with ``seed``; mean completion time."""
    return run_episode(env, policy, seed, random.Random(seed)).metrics.mean_completion
