"""Where a scenario's catalog comes from (built in, a file, or the keyed synthetic generator)."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from layersched.sim.catalog import Catalog, CatalogStructure, load_catalog, synthetic_catalog
from layersched.sim.errors import CatalogError
from layersched.sim.keyed_random import KeyedRandom


@dataclass(frozen=True)
class CatalogSource:
    """Where a scenario's catalog comes from: a built-in name, a file, or the synthetic generator.

    A synthetic catalog has exactly one of ``key`` (hidden: ``KeyedRandom(key, "catalog")``) and ``seed``
    (public: ``random.Random(seed)``; seed 0 with the default structure is the lab's catalog).
    """

    name: str
    kind: Literal["builtin", "file", "synthetic"]
    path: str | None = None
    key: bytes | None = field(default=None, repr=False)
    seed: int | None = None
    structure: CatalogStructure = field(default_factory=CatalogStructure)
    sha256: str | None = None

    def load(self, base_dir: Path) -> Catalog:
        """Build the catalog; a file path is relative to ``base_dir`` (the evaluation set's folder)."""
        if self.kind == "builtin":
            return load_catalog(self.name)
        if self.kind == "file":
            assert self.path is not None
            path = base_dir / self.path
            if not path.is_file():
                raise CatalogError(f"catalog {self.name!r}: file {self.path!r} not found next to the set")
            catalog = dataclasses.replace(load_catalog(path), name=self.name)
            if self.sha256 is not None and catalog.content_hash != self.sha256:
                raise CatalogError(
                    f"catalog {self.name!r}: {self.path!r} has content hash {catalog.content_hash}, "
                    f"but the set pins sha256 = {self.sha256}"
                )
            return catalog
        rng = KeyedRandom(self.key, "catalog") if self.key is not None else random.Random(self.seed)
        return synthetic_catalog(rng, self.structure, name=self.name)

    def canonical(self, catalog: Catalog, *, public: bool = False) -> dict[str, Any]:
        """The committed description: built-in and file catalogs by content, synthetic ones by recipe."""
        if self.kind != "synthetic":
            return {"kind": self.kind, "sha256": catalog.content_hash}
        out: dict[str, Any] = {"kind": "synthetic", "structure": structure_json(self.structure)}
        if self.seed is not None:
            out["seed"] = self.seed
        elif public:
            out["hidden"] = True
        else:
            assert self.key is not None
            out["key"] = self.key.hex()
        return out


def structure_json(structure: CatalogStructure) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in dataclasses.asdict(structure).items():
        if name.endswith("_mb"):
            out[name] = [float(v) for v in value]
        else:
            out[name] = list(value) if isinstance(value, tuple) else value
    return out
