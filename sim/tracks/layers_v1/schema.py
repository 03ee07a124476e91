"""How the lab's scenarios are written in an evaluation-set file: the cluster's keys of a ``[[scenario]]`` table, and
``[catalogs]`` (the catalogs other than the built-in ones: a file, or the keyed synthetic generator).

The track object (``layersched.sim.tracks.layers_v1.TRACK``) delegates its ``ScenarioSchema`` methods here. A
scenario's ``source`` is its ``CatalogSource`` (None for a scenario built in code from a ``Catalog`` object, which
is pinned by its content alone).
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from layersched.sim.errors import CatalogError, EvalSetError, ScenarioError
from layersched.sim.keyed_random import KeyedRandom
from layersched.sim.tracks.interface import ScenarioEntry
from layersched.sim.tracks.layers_v1.catalog import (
    BUILTIN_CATALOGS,
    Catalog,
    CatalogStructure,
    load_catalog,
    synthetic_catalog,
)
from layersched.sim.tracks.layers_v1.scenario import CloudNode, NodeRanges, Scenario
from layersched.sim.tracks.layers_v1.workload import draw_nodes
from layersched.sim.tracks.values import check_name, integer, no_unknown, number, pair, parse_source, source_json

SCENARIO_KEYS = frozenset(
    {"catalog", "n_nodes", "n_tasks", "arrival_rate", "slots", "nodes", "cycles_g", "zipf_s", "cloud"}
)
TABLES = frozenset({"catalogs"})
_STRUCTURE_FIELDS = {f.name: f for f in dataclasses.fields(CatalogStructure)}


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
        structure = structure_json(self.structure)
        return {"kind": "synthetic", "structure": structure, **source_json(self.seed, self.key, public=public)}


def structure_json(structure: CatalogStructure) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in dataclasses.asdict(structure).items():
        if name.endswith("_mb"):
            out[name] = [float(v) for v in value]
        else:
            out[name] = list(value) if isinstance(value, tuple) else value
    return out


# ------------------------------------------------------------------------------------------------ reading


@dataclass
class FileCatalogs:
    """A file's ``[catalogs]`` and the catalogs its scenarios loaded so far (each is built once per file)."""

    sources: dict[str, CatalogSource]
    base_dir: Path
    loaded: dict[str, Catalog] = field(default_factory=dict)


def read_tables(tables: Mapping[str, Any], *, base_dir: Path) -> FileCatalogs:
    return FileCatalogs(parse_catalog_sources(tables.get("catalogs", {})), base_dir)


def parse_catalog_sources(raw: Any) -> dict[str, CatalogSource]:
    if not isinstance(raw, dict):
        raise EvalSetError(f"[catalogs] must be a table of catalog definitions, got {raw!r}")
    sources = {}
    for name, table in raw.items():
        check_name(name, "catalog name")
        where = f"catalog {name!r}"
        if name in BUILTIN_CATALOGS:
            raise EvalSetError(f"{where}: this name is built in; choose another name")
        if not isinstance(table, dict):
            raise EvalSetError(f"{where}: expected a table, got {table!r}")
        kind = table.get("kind")
        if kind == "file":
            no_unknown(table, {"kind", "file", "sha256"}, where)
            path = table.get("file")
            if not isinstance(path, str) or not path:
                raise EvalSetError(f"{where}: 'file' must be a path relative to the set's file, got {path!r}")
            pin = table.get("sha256")
            if pin is not None and not (isinstance(pin, str) and re.fullmatch(r"[0-9a-f]{64}", pin)):
                raise EvalSetError(f"{where}: 'sha256' must be 64 lowercase hex digits, got {pin!r}")
            sources[name] = CatalogSource(name, "file", path=path, sha256=pin)
        elif kind == "synthetic":
            no_unknown(table, {"kind", "key", "seed", *_STRUCTURE_FIELDS}, where)
            key, seed = parse_source(table, where)
            structure = _parse_structure(table, where)
            sources[name] = CatalogSource(name, "synthetic", key=key, seed=seed, structure=structure)
        else:
            raise EvalSetError(f"{where}: kind must be 'file' or 'synthetic', got {kind!r}")
    return sources


def _parse_structure(table: Mapping[str, Any], where: str) -> CatalogStructure:
    values: dict[str, Any] = {}
    for name in _STRUCTURE_FIELDS:
        if name not in table:
            continue
        value = table[name]
        if name.startswith("n_"):
            values[name] = integer(value, f"{where}: {name}", minimum=1)
        elif name.endswith("_layers"):
            lo, hi = pair(value, f"{where}: {name}")
            if lo != int(lo) or hi != int(hi):
                raise EvalSetError(f"{where}: {name} must be a pair of integers, got {value!r}")
            values[name] = (int(lo), int(hi))
        else:
            values[name] = pair(value, f"{where}: {name}")
    structure = CatalogStructure(**values)
    try:
        structure.validate()
    except CatalogError as exc:
        raise EvalSetError(f"{where}: {exc}") from exc
    return structure


def parse_scenario(table: Mapping[str, Any], where: str, catalogs: FileCatalogs) -> tuple[Scenario, CatalogSource]:
    catalog_name = table.get("catalog", "lab")
    if not isinstance(catalog_name, str):
        raise EvalSetError(f"{where}: catalog must be a name (built in or from [catalogs]), got {catalog_name!r}")
    if catalog_name in catalogs.sources:
        source = catalogs.sources[catalog_name]
    elif catalog_name in BUILTIN_CATALOGS:
        source = CatalogSource(catalog_name, "builtin")
    else:
        raise EvalSetError(
            f"{where}: unknown catalog {catalog_name!r}; use a built-in name "
            f"({', '.join(sorted(BUILTIN_CATALOGS))}) or define it under [catalogs]"
        )
    if catalog_name not in catalogs.loaded:
        try:
            catalogs.loaded[catalog_name] = source.load(catalogs.base_dir)
        except CatalogError as exc:
            raise EvalSetError(f"{where}: {exc}") from exc
    params: dict[str, Any] = {}
    for key in ("n_nodes", "n_tasks", "slots"):
        if key in table:
            params[key] = integer(table[key], f"{where}: {key}", minimum=1)
    for key in ("arrival_rate", "zipf_s"):
        if key in table:
            params[key] = number(table[key], f"{where}: {key}")
    if "cycles_g" in table:
        params["cycles_g"] = pair(table["cycles_g"], f"{where}: cycles_g")
    if "nodes" in table:
        params["nodes"] = _parse_nodes(table["nodes"], where)
    if "cloud" in table:
        params["cloud"] = _parse_cloud(table["cloud"], where)
    try:
        scenario = Scenario(catalog=catalogs.loaded[catalog_name], **params)
    except ScenarioError as exc:
        raise EvalSetError(f"{where}: {exc}") from exc
    return scenario, source


def _parse_nodes(raw: Any, where: str) -> NodeRanges:
    if not isinstance(raw, dict):
        raise EvalSetError(f"{where}: nodes must be a table of ranges, got {raw!r}")
    allowed = {f.name for f in dataclasses.fields(NodeRanges)}
    no_unknown(raw, allowed, f"{where}: nodes")
    return NodeRanges(**{k: pair(v, f"{where}: nodes.{k}") for k, v in raw.items()})


def _parse_cloud(raw: Any, where: str) -> CloudNode | None:
    if raw is True:
        return CloudNode()
    if raw is False:
        return None
    if not isinstance(raw, dict):
        raise EvalSetError(f"{where}: cloud must be true, false or a table, got {raw!r}")
    no_unknown(raw, {"bandwidth_mbps", "freq_ghz"}, f"{where}: cloud")
    return CloudNode(**{k: number(v, f"{where}: cloud.{k}") for k, v in raw.items()})


# ------------------------------------------------------------------------------------------------ checking


def check_scenarios(scenarios: Sequence[ScenarioEntry]) -> None:
    sources: dict[str, CatalogSource] = {}
    for sc in scenarios:
        source = _source(sc)
        if source is not None and sources.setdefault(source.name, source) != source:
            raise EvalSetError(f"scenario {sc.name!r}: catalog name {source.name!r} names two catalogs")
        _check_playable(sc)


def _check_playable(sc: ScenarioEntry) -> None:
    """Every image must fit on some node of every episode, or the episode has a task no policy can place.

    ``Scenario`` only checks the largest storage nodes *can* get; the nodes an episode actually draws may all be
    smaller. Drawing the nodes is the first thing an episode does, so this costs a few draws per episode.
    """
    scenario: Scenario = sc.scenario
    largest = max(scenario.catalog.images, key=lambda im: im.size_mb)
    if scenario.cloud is not None or largest.size_mb <= scenario.nodes.storage_gb[0] * 1024:
        return
    for ep in sc.episodes:
        biggest = max(node.storage for node in draw_nodes(scenario, ep.workload_rng()))
        if largest.size_mb > biggest:
            raise EvalSetError(
                f"scenario {sc.name!r} episode {ep.id!r}: image {largest.name!r} ({largest.size_mb:.1f} MB) fits "
                f"on no node of this episode (the largest holds {biggest:.1f} MB); raise nodes.storage_gb or add "
                "a cloud node"
            )


def secret_keys(sc: ScenarioEntry) -> Iterator[tuple[bytes, str]]:
    source = _source(sc)
    if source is not None and source.key is not None:
        yield source.key, f"catalog {source.name!r}"


def _source(sc: ScenarioEntry) -> CatalogSource | None:
    source = sc.source
    if source is not None and not isinstance(source, CatalogSource):
        raise EvalSetError(f"scenario {sc.name!r}: source must be a CatalogSource or None, got {source!r:.80}")
    return source


# ------------------------------------------------------------------------------------------------ committing


def scenario_canonical(sc: ScenarioEntry, *, public: bool) -> dict[str, Any]:
    # Nothing secret in the cluster: a hidden catalog's key is in tables_canonical.
    scenario: Scenario = sc.scenario
    source = _source(sc)
    return {
        "catalog": source.name if source is not None else scenario.catalog.name,
        "n_nodes": scenario.n_nodes,
        "n_tasks": scenario.n_tasks,
        "arrival_rate": float(scenario.arrival_rate),
        "slots": scenario.slots,
        "nodes": {
            "bandwidth_mbps": _floats(scenario.nodes.bandwidth_mbps),
            "freq_ghz": _floats(scenario.nodes.freq_ghz),
            "storage_gb": _floats(scenario.nodes.storage_gb),
        },
        "cycles_g": _floats(scenario.cycles_g),
        "zipf_s": float(scenario.zipf_s),
        "cloud": None
        if scenario.cloud is None
        else {"bandwidth_mbps": float(scenario.cloud.bandwidth_mbps), "freq_ghz": float(scenario.cloud.freq_ghz)},
    }


def tables_canonical(scenarios: Sequence[ScenarioEntry], *, public: bool) -> dict[str, Any]:
    catalogs: dict[str, Any] = {}
    for sc in scenarios:
        source = _source(sc)
        catalog = sc.scenario.catalog
        if source is None:  # built in code from a Catalog object: pinned by content only
            catalogs.setdefault(catalog.name, {"kind": "inline", "sha256": catalog.content_hash})
        else:
            catalogs.setdefault(source.name, source.canonical(catalog, public=public))
    return {"catalogs": catalogs}


def _floats(pair: tuple[float, float]) -> list[float]:
    return [float(pair[0]), float(pair[1])]


# ------------------------------------------------------------------------------------------------ writing


def dump_scenario(sc: ScenarioEntry) -> dict[str, Any]:
    data = scenario_canonical(sc, public=False)
    order = ("catalog", "n_nodes", "n_tasks", "arrival_rate", "slots", "cycles_g", "zipf_s", "nodes", "cloud")
    # TOML has no null: no cloud node is written as no `cloud` key, which reads back as None.
    return {key: data[key] for key in order if data[key] is not None}


def dump_tables(
    scenarios: Sequence[ScenarioEntry], *, relocate: Callable[[str], str]
) -> dict[str, dict[str, dict[str, Any]]]:
    catalogs: dict[str, dict[str, Any]] = {}
    for sc in scenarios:
        source = _source(sc)
        if source is None and sc.scenario.catalog.name not in BUILTIN_CATALOGS:
            raise EvalSetError(f"scenario {sc.name!r}: catalog {sc.scenario.catalog.name!r} has no source to write")
        if source is None or source.kind == "builtin" or source.name in catalogs:
            continue
        table: dict[str, Any] = {"kind": source.kind}
        if source.kind == "file":
            assert source.path is not None
            table["file"] = relocate(source.path)
            table["sha256"] = sc.scenario.catalog.content_hash
        else:
            if source.key is not None:
                table["key"] = source.key.hex()
            else:
                table["seed"] = source.seed
            table.update(structure_json(source.structure))
        catalogs[source.name] = table
    return {"catalogs": catalogs} if catalogs else {}
