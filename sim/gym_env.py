"""The lab's Gymnasium env (``LayerSchedEnv``) at its old import path, for students' policies and the lab's scripts.

The module is ``layersched.sim.tracks.layers_v1.gym_env``: the lab's problem lives wholly in its track's package, as
every track's does. This one re-exports the names it had (the same objects) and holds nothing else; nothing in
layersched imports through it (tests/sim/layers/test_old_paths.py checks both).
"""

from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.gym_env import LayerSchedEnv
from layersched.sim.tracks.layers_v1.scenario import Scenario
from layersched.sim.tracks.layers_v1.workload import Task

__all__ = ["ClusterEnv", "LayerSchedEnv", "Scenario", "Task"]
