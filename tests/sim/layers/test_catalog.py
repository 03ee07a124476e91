"""Catalog validation: real registry catalogs load, malformed ones fail with a message naming the fault."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from layersched.sim.errors import CatalogError, ScenarioError
from layersched.sim.tracks.layers_v1.catalog import (
    BUILTIN_CATALOGS,
    MAX_LAYER_MB,
    catalog_summary,
    load_catalog,
    parse_catalog,
)
from layersched.sim.tracks.layers_v1.scenario import CloudNode, NodeRanges, Scenario

D1 = "sha256:" + "1" * 64
D2 = "sha256:" + "2" * 64


def image(name: str, *layers: tuple[str, Any]) -> dict[str, Any]:
    return {"name": name, "layers": [{"digest": d, "size_mb": s} for d, s in layers]}


@pytest.mark.parametrize(
    ("name", "images", "distinct_layers"),
    [("lab", 60, 147), ("official-2023-01", 47, 229), ("hub-top70-2023-07", 70, 398)],
    ids=["lab", "official", "hub"],
)
def test_builtin_catalogs_load(name: str, images: int, distinct_layers: int) -> None:
    catalog = load_catalog(name)
    summary = catalog_summary(catalog)
    assert (summary["images"], summary["distinct_layers"]) == (images, distinct_layers)
    assert catalog.name == name
    assert len(catalog.content_hash) == 64


def test_real_catalogs_share_layers_between_images() -> None:
    # The point of the real catalogs: base layers (debian, alpine) shared by many images.
    for name in ("official-2023-01", "hub-top70-2023-07"):
        catalog = load_catalog(name)
        uses: dict[str, int] = {}
        for im in catalog.images:
            for la in im.layers:
                uses[la.digest] = uses.get(la.digest, 0) + 1
        assert max(uses.values()) >= 5, name


CASES: list[tuple[str, Any, str]] = [
    ("not-a-list", {"name": "x"}, "catalog 't': expected a non-empty JSON list of images, got {'name': 'x'}"),
    ("empty-catalog", [], "catalog 't': expected a non-empty JSON list of images, got []"),
    ("no-name", [{"layers": []}], "catalog 't': image #0 needs a non-empty string 'name', got {'layers': []}"),
    ("duplicate-name", [image("a", (D1, 1.0)), image("a", (D2, 1.0))], "catalog 't': image name 'a' appears twice"),
    ("empty-image", [image("a")], "catalog 't': image 'a' has no layers"),
    ("layers-not-list", [{"name": "a", "layers": "x"}], "catalog 't': image 'a' has no layers"),
    (
        "duplicate-digest-sizes",
        [image("a", (D1, 10.0)), image("b", (D1, 12.5))],
        f"catalog 't': layer '{D1}' has two sizes, 10.0 MB and 12.5 MB (second in image 'b')",
    ),
    (
        "repeated-layer",
        [image("a", (D1, 10.0), (D2, 1.0), (D1, 10.0))],
        f"catalog 't': image 'a' lists layer '{D1}' twice",
    ),
    (
        "negative-size",
        [image("a", (D1, -1.0))],
        f"catalog 't': image 'a' layer #0: 'size_mb' must be between 0 and {MAX_LAYER_MB:.0f}, got -1.0",
    ),
    (
        "absurd-size",
        [image("a", (D1, 2.5e9))],  # bytes given where MB were expected
        "catalog 't': image 'a' layer #0: 'size_mb' must be between 0 and 65536, got 2500000000.0",
    ),
    (
        "nan-size",
        [image("a", (D1, float("nan")))],
        "catalog 't': image 'a' layer #0: 'size_mb' must be between 0 and 65536, got nan",
    ),
    ("string-size", [image("a", (D1, "12"))], "catalog 't': image 'a' layer #0: 'size_mb' must be a number, got '12'"),
    ("bool-size", [image("a", (D1, True))], "catalog 't': image 'a' layer #0: 'size_mb' must be a number, got True"),
    (
        "empty-digest",
        [image("a", ("", 1.0))],
        "catalog 't': image 'a' layer #0: 'digest' must be a non-empty string, got ''",
    ),
    (
        "layer-not-object",
        [{"name": "a", "layers": [[D1, 1.0]]}],
        "catalog 't': image 'a' layer #0: expected an object with 'digest' and 'size_mb', "
        "got ['sha256:111111111111111111111111111111111111111111111111...",
    ),
]


@pytest.mark.parametrize(("raw", "message"), [(r, m) for _, r, m in CASES], ids=[c[0] for c in CASES])
def test_parse_catalog_errors(raw: Any, message: str) -> None:
    with pytest.raises(CatalogError) as exc:
        parse_catalog(raw, name="t")
    assert str(exc.value) == message


def test_same_digest_same_size_is_shared() -> None:
    catalog = parse_catalog([image("a", (D1, 10.0), (D2, 1.0)), image("b", (D1, 10.0))], name="t")
    assert [im.size_mb for im in catalog.images] == [11.0, 10.0]


def test_load_catalog_file_errors(tmp_path: Path) -> None:
    with pytest.raises(CatalogError) as exc:
        load_catalog(tmp_path / "nope.json")
    assert str(exc.value) == (
        f"unknown catalog '{tmp_path / 'nope.json'}': not a built-in name "
        f"({', '.join(sorted(BUILTIN_CATALOGS))}) and not a file"
    )
    bad = tmp_path / "bad.json"
    bad.write_text("[{")
    with pytest.raises(CatalogError) as exc:
        load_catalog(bad)
    assert str(exc.value).startswith(f"catalog '{bad}': not valid JSON (")


def test_load_catalog_validates_files(tmp_path: Path) -> None:
    path = tmp_path / "cat.json"
    path.write_text(json.dumps([image("a", (D1, 10.0)), image("b", (D1, 11.0))]))
    with pytest.raises(CatalogError) as exc:
        load_catalog(path)
    assert (
        str(exc.value) == f"catalog 'cat.json': layer '{D1}' has two sizes, 10.0 MB and 11.0 MB (second in image 'b')"
    )


def test_image_larger_than_every_node_is_rejected() -> None:
    catalog = parse_catalog([image("small", (D1, 100.0)), image("huge", (D1, 100.0), (D2, 20000.0))], name="t")
    with pytest.raises(ScenarioError) as exc:
        Scenario(catalog=catalog)
    assert str(exc.value) == (
        "image 'huge' of catalog 't' needs 20100.0 MB but no node can hold more than 15360 MB "
        "(nodes.storage_gb=(5.0, 15.0))"
    )
    # Larger nodes, or a cloud node that can always take it, make the same catalog usable.
    assert Scenario(catalog=catalog, nodes=NodeRanges(storage_gb=(5.0, 20.0))).catalog is catalog
    assert Scenario(catalog=catalog, cloud=CloudNode()).cloud == CloudNode()


@pytest.mark.parametrize("name", sorted(BUILTIN_CATALOGS))
def test_builtin_catalogs_fit_the_lab_nodes(name: str) -> None:
    assert Scenario(catalog=load_catalog(name), n_nodes=5).catalog.largest_image_mb() <= 5 * 1024
