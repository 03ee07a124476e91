"""The lab's in-process episode (``run_episode``) at its old import path, for students' policies and the lab's scripts.

The module is ``layersched.sim.tracks.layers_v1.episode``: the lab's problem lives wholly in its track's package, as
every track's does. This one re-exports the names it had (the same objects) and holds nothing else; nothing in
layersched imports through it (tests/sim/layers/test_old_paths.py checks both).
"""

from layersched.sim.episodes import trace_hash
from layersched.sim.errors import PolicyError
from layersched.sim.tracks.layers_v1.baselines import Policy
from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.episode import (
    EpisodeMetrics,
    EpisodeResult,
    check_action,
    episode_metrics,
    percentile,
    run_episode,
    run_lab_baseline,
)
from layersched.sim.tracks.layers_v1.workload import Task

__all__ = [
    "ClusterEnv",
    "EpisodeMetrics",
    "EpisodeResult",
    "Policy",
    "PolicyError",
    "Task",
    "check_action",
    "episode_metrics",
    "percentile",
    "run_episode",
    "run_lab_baseline",
    "trace_hash",
]
