"""The lab's cluster model (``ClusterEnv``) at its old import path, for students' policies and the lab's scripts.

The module is ``layersched.sim.tracks.layers_v1.env``: the lab's problem lives wholly in its track's package, as every
track's does. This one re-exports the names it had (the same objects) and holds nothing else; nothing in layersched
imports through it (tests/sim/layers/test_old_paths.py checks both).
"""

from layersched.sim.tracks.layers_v1.env import ABSENT, ClusterEnv, Estimate, Node, NodeState, ObserveKernel, Plan
from layersched.sim.tracks.layers_v1.scenario import Scenario
from layersched.sim.tracks.layers_v1.workload import NodeSpec, Task, draw_episode

__all__ = [
    "ABSENT",
    "ClusterEnv",
    "Estimate",
    "Node",
    "NodeSpec",
    "NodeState",
    "ObserveKernel",
    "Plan",
    "Scenario",
    "Task",
    "draw_episode",
]
