"""The lab's policy's view (``TrueView``) at its old import path, for students' policies and the lab's scripts.

The module is ``layersched.sim.tracks.layers_v1.view``: the lab's problem lives wholly in its track's package, as every
track's does. This one re-exports the names it had (the same objects) and holds nothing else; nothing in layersched
imports through it (tests/sim/layers/test_old_paths.py checks both).
"""

from layersched.sim.tracks.layers_v1.env import ClusterEnv, Node
from layersched.sim.tracks.layers_v1.view import (
    TrueView,
    WatchedDict,
    WatchedEnv,
    WatchedList,
    WatchedNode,
    watched_copy,
)
from layersched.sim.tracks.layers_v1.workload import Task

__all__ = [
    "ClusterEnv",
    "Node",
    "Task",
    "TrueView",
    "WatchedDict",
    "WatchedEnv",
    "WatchedList",
    "WatchedNode",
    "watched_copy",
]
