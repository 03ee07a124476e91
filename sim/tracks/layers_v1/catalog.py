"""Image catalogs: which layers each container image is made of, and how large each layer is.

A catalog file is the lab's format, a JSON list of ``{"name": str, "layers": [{"digest": str, "size_mb": float}]}``
with layers in manifest order. Catalogs come from three places:

* the synthetic generator, which reproduces the lab's ``make_images.py`` exactly for ``random.Random(0)`` and can
  be driven by a secret seed (a hidden catalog) or given another structure;
* files shipped in ``layersched/sim/data`` (the lab's seed-0 catalog and two real registry snapshots);
* any file an organiser points to.

Every catalog is validated on load; a bad one raises ``CatalogError`` naming the offending image or layer.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layersched.sim.canonical import canonical_json
from layersched.sim.errors import CatalogError

DATA_DIR = Path(__file__).parent / "data"

# Name -> file under DATA_DIR. "lab" is the lab's synthetic catalog for seed 0 (regenerate it with
# `python -m layersched.sim catalog --seed 0 --out sim/tracks/layers_v1/data/lab_seed0.json`).
BUILTIN_CATALOGS = {
    "lab": "lab_seed0.json",
    "official-2023-01": "repoinfo_official_2023-01.json",
    "hub-top70-2023-07": "hub_latest_2023-07-12_top70.json",
}

# A compressed layer above 64 GiB is not a container image layer: it is a unit mistake (bytes given as MB).
MAX_LAYER_MB = 64 * 1024.0


@dataclass(frozen=True)
class Layer:
    digest: str
    size_mb: float


@dataclass(frozen=True)
class Image:
    name: str
    layers: tuple[Layer, ...]

    @property
    def size_mb(self) -> float:
        # Summed in manifest order from an int 0, as the lab does, so that storage checks agree bit for bit.
        return sum(layer.size_mb for layer in self.layers)


@dataclass(frozen=True)
class Catalog:
    """A validated, immutable catalog with a content hash that identifies it in results."""

    name: str
    images: tuple[Image, ...]

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(canonical_json(self.to_json())).hexdigest()

    def to_json(self) -> list[dict[str, Any]]:
        return [
            {"name": im.name, "layers": [{"digest": la.digest, "size_mb": la.size_mb} for la in im.layers]}
            for im in self.images
        ]

    def largest_image_mb(self) -> float:
        return max(im.size_mb for im in self.images)


def parse_catalog(raw: Any, *, name: str) -> Catalog:
    """Validate the lab's JSON structure and build a ``Catalog``; errors name the image and layer at fault."""
    if not isinstance(raw, list) or not raw:
        raise CatalogError(f"catalog {name!r}: expected a non-empty JSON list of images, got {_describe(raw)}")
    images: list[Image] = []
    sizes: dict[str, float] = {}
    names: set[str] = set()
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
            raise CatalogError(f"catalog {name!r}: image #{i} needs a non-empty string 'name', got {_describe(entry)}")
        image_name = entry["name"]
        if image_name in names:
            raise CatalogError(f"catalog {name!r}: image name {image_name!r} appears twice")
        names.add(image_name)
        raw_layers = entry.get("layers")
        if not isinstance(raw_layers, list) or not raw_layers:
            raise CatalogError(f"catalog {name!r}: image {image_name!r} has no layers")
        layers: list[Layer] = []
        for j, raw_layer in enumerate(raw_layers):
            layer = _parse_layer(raw_layer, where=f"catalog {name!r}: image {image_name!r} layer #{j}")
            if any(seen.digest == layer.digest for seen in layers):
                # The model downloads and counts each digest of an image once; a repeat would make estimate() and
                # place() disagree about the missing bytes.
                raise CatalogError(f"catalog {name!r}: image {image_name!r} lists layer {layer.digest!r} twice")
            layers.append(layer)
        for layer in layers:
            known = sizes.setdefault(layer.digest, layer.size_mb)
            if known != layer.size_mb:
                raise CatalogError(
                    f"catalog {name!r}: layer {layer.digest!r} has two sizes, {known} MB and {layer.size_mb} MB "
                    f"(second in image {image_name!r})"
                )
        images.append(Image(image_name, tuple(layers)))
    return Catalog(name, tuple(images))


def _parse_layer(raw: Any, *, where: str) -> Layer:
    if not isinstance(raw, dict):
        raise CatalogError(f"{where}: expected an object with 'digest' and 'size_mb', got {_describe(raw)}")
    digest, size = raw.get("digest"), raw.get("size_mb")
    if not isinstance(digest, str) or not digest:
        raise CatalogError(f"{where}: 'digest' must be a non-empty string, got {digest!r}")
    if isinstance(size, bool) or not isinstance(size, (int, float)):
        raise CatalogError(f"{where}: 'size_mb' must be a number, got {size!r}")
    if not (0 <= size <= MAX_LAYER_MB) or size != size:
        raise CatalogError(f"{where}: 'size_mb' must be between 0 and {MAX_LAYER_MB:.0f}, got {size!r}")
    return Layer(digest, float(size))


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def load_catalog(source: str | Path) -> Catalog:
    """Load a built-in catalog by name (``lab``, ``official-2023-01``, ``hub-top70-2023-07``) or a JSON file."""
    text_source = str(source)
    if text_source in BUILTIN_CATALOGS:
        path = DATA_DIR / BUILTIN_CATALOGS[text_source]
        name = text_source
    else:
        path = Path(text_source)
        name = path.name
        if not path.is_file():
            raise CatalogError(
                f"unknown catalog {text_source!r}: not a built-in name ({', '.join(sorted(BUILTIN_CATALOGS))}) "
                "and not a file"
            )
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(f"catalog {text_source!r}: cannot read {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise CatalogError(f"catalog {text_source!r}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    return parse_catalog(raw, name=name)


@dataclass(frozen=True)
class CatalogStructure:
    """Shape of a synthetic catalog. The defaults are the lab's ``make_images.py``."""

    n_bases: int = 4
    base_mb: tuple[float, float] = (30.0, 120.0)
    n_runtimes: int = 10
    runtime_layers: tuple[int, int] = (1, 3)
    runtime_mb: tuple[float, float] = (50.0, 400.0)
    n_images: int = 60
    app_layers: tuple[int, int] = (1, 3)
    app_mb: tuple[float, float] = (1.0, 300.0)

    def validate(self) -> None:
        for field_name in ("n_bases", "n_runtimes", "n_images"):
            if getattr(self, field_name) < 1:
                raise CatalogError(
                    f"synthetic catalog: {field_name} must be at least 1, got {getattr(self, field_name)}"
                )
        for field_name in ("runtime_layers", "app_layers", "base_mb", "runtime_mb", "app_mb"):
            lo, hi = getattr(self, field_name)
            if lo < 0 or hi < lo:
                raise CatalogError(f"synthetic catalog: {field_name} must be a range 0 <= lo <= hi, got {(lo, hi)}")


def synthetic_catalog(
    rng: random.Random, structure: CatalogStructure = CatalogStructure(), *, name: str = "synthetic"
) -> Catalog:
    """Generate base -> runtime -> application layer stacks the way the lab's ``make_images.py`` does.

    Draw order matters: with ``random.Random(0)`` and the default structure this is the lab's catalog, digest for
    digest. Pass a ``KeyedRandom`` to make a hidden catalog no student can regenerate.
    """
    structure.validate()

    def layer(prefix: str, size_mb: float) -> dict[str, Any]:
        # The size is drawn before the digest: the lab evaluates the argument first.
        return {"digest": f"{prefix}-{rng.randrange(16**8):08x}", "size_mb": round(size_mb, 1)}

    bases = [layer("base", rng.uniform(*structure.base_mb)) for _ in range(structure.n_bases)]
    runtimes = []
    for _ in range(structure.n_runtimes):
        base = rng.choice(bases)
        count = rng.randint(*structure.runtime_layers)
        runtimes.append([base] + [layer("rt", rng.uniform(*structure.runtime_mb)) for _ in range(count)])
    images = []
    for i in range(structure.n_images):
        stack = rng.choice(runtimes)
        count = rng.randint(*structure.app_layers)
        app = [layer("app", rng.uniform(*structure.app_mb)) for _ in range(count)]
        images.append({"name": f"img{i:02d}", "layers": stack + app})
    return parse_catalog(images, name=name)


def catalog_summary(catalog: Catalog) -> dict[str, float]:
    """Counts and sizes an organiser checks before using a catalog."""
    sizes = [im.size_mb for im in catalog.images]
    distinct = {la.digest: la.size_mb for im in catalog.images for la in im.layers}
    return {
        "images": len(sizes),
        "distinct_layers": len(distinct),
        "mean_image_mb": sum(sizes) / len(sizes),
        "max_image_mb": max(sizes),
    }


def image_names(catalog: Catalog) -> Sequence[str]:
    return [im.name for im in catalog.images]
