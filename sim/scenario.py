"""The lab's scenarios at its old import path, for students' policies and the lab's scripts.

The module is ``layersched.sim.tracks.layers_v1.scenario``: the lab's problem lives wholly in its track's package, as
every track's does. This one re-exports the names it had (the same objects) and holds nothing else; nothing in
layersched imports through it (tests/sim/layers/test_old_paths.py checks both).
"""

from layersched.sim.canonical import canonical_json
from layersched.sim.errors import ScenarioError
from layersched.sim.tracks.layers_v1.catalog import Catalog, load_catalog
from layersched.sim.tracks.layers_v1.scenario import RULES_HASH, CloudNode, NodeRanges, Scenario
from layersched.sim.version import SIM_VERSION

__all__ = [
    "RULES_HASH",
    "SIM_VERSION",
    "Catalog",
    "CloudNode",
    "NodeRanges",
    "Scenario",
    "ScenarioError",
    "canonical_json",
    "load_catalog",
]
