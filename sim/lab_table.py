"""The lab's baseline table (``python -m layersched.sim``) at its old import path, for the lab's scripts.

The module is ``layersched.sim.tracks.layers_v1.table``: the lab's problem lives wholly in its track's package, as every
track's does. This one re-exports the names it had (the same objects) and holds nothing else; nothing in layersched
imports through it (tests/sim/layers/test_old_paths.py checks both).
"""

from layersched.sim.tracks.layers_v1.table import baseline_table, build_parser, main

__all__ = ["baseline_table", "build_parser", "main"]
