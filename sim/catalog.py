"""The lab's image catalogs at its old import path, for students' policies and the lab's scripts.

The module is ``layersched.sim.tracks.layers_v1.catalog``: the lab's problem lives wholly in its track's package, as
every track's does. This one re-exports the names it had (the same objects) and holds nothing else; nothing in
layersched imports through it (tests/sim/layers/test_old_paths.py checks both).
"""

from layersched.sim.canonical import canonical_json
from layersched.sim.errors import CatalogError
from layersched.sim.tracks.layers_v1.catalog import (
    BUILTIN_CATALOGS,
    DATA_DIR,
    MAX_LAYER_MB,
    Catalog,
    CatalogStructure,
    Image,
    Layer,
    catalog_summary,
    image_names,
    load_catalog,
    parse_catalog,
    synthetic_catalog,
)

__all__ = [
    "BUILTIN_CATALOGS",
    "DATA_DIR",
    "MAX_LAYER_MB",
    "Catalog",
    "CatalogError",
    "CatalogStructure",
    "Image",
    "Layer",
    "canonical_json",
    "catalog_summary",
    "image_names",
    "load_catalog",
    "parse_catalog",
    "synthetic_catalog",
]
