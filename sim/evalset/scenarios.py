"""A ``[[scenario]]`` table: the simulated cluster, its catalog (``[catalogs]``) and its episodes."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from layersched.sim.catalog import BUILTIN_CATALOGS, Catalog, CatalogStructure
from layersched.sim.episodes import EpisodeSpec
from layersched.sim.errors import CatalogError, EvalSetError, ScenarioError
from layersched.sim.evalset.model import SPLITS, EvalScenario
from layersched.sim.evalset.sources import CatalogSource
from layersched.sim.evalset.values import check_name, integer, no_unknown, number, pair, parse_source
from layersched.sim.scenario import CloudNode, NodeRanges, Scenario

_STRUCTURE_FIELDS = {f.name: f for f in dataclasses.fields(CatalogStructure)}
_SCENARIO_KEYS = {
    "name",
    "weight",
    "catalog",
    "n_nodes",
    "n_tasks",
    "arrival_rate",
    "slots",
    "nodes",
    "cycles_g",
    "zipf_s",
    "cloud",
    "episodes",
}


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


def parse_scenario(
    entry: Any, index: int, sources: dict[str, CatalogSource], loaded: dict[str, Catalog], base_dir: Path
) -> EvalScenario:
    if not isinstance(entry, dict):
        raise EvalSetError(f"scenario #{index}: expected a table, got {entry!r}")
    name = entry.get("name")
    check_name(name, f"scenario #{index}: name")
    assert isinstance(name, str)
    where = f"scenario {name!r}"
    no_unknown(entry, _SCENARIO_KEYS, where)
    weight = number(entry.get("weight", 1.0), f"{where}: weight")
    catalog_name = entry.get("catalog", "lab")
    if not isinstance(catalog_name, str):
        raise EvalSetError(f"{where}: catalog must be a name (built in or from [catalogs]), got {catalog_name!r}")
    if catalog_name in sources:
        source = sources[catalog_name]
    elif catalog_name in BUILTIN_CATALOGS:
        source = CatalogSource(catalog_name, "builtin")
    else:
        raise EvalSetError(
            f"{where}: unknown catalog {catalog_name!r}; use a built-in name "
            f"({', '.join(sorted(BUILTIN_CATALOGS))}) or define it under [catalogs]"
        )
    if catalog_name not in loaded:
        try:
            loaded[catalog_name] = source.load(base_dir)
        except CatalogError as exc:
            raise EvalSetError(f"{where}: {exc}") from exc
    params: dict[str, Any] = {}
    for key in ("n_nodes", "n_tasks", "slots"):
        if key in entry:
            params[key] = integer(entry[key], f"{where}: {key}", minimum=1)
    for key in ("arrival_rate", "zipf_s"):
        if key in entry:
            params[key] = number(entry[key], f"{where}: {key}")
    if "cycles_g" in entry:
        params["cycles_g"] = pair(entry["cycles_g"], f"{where}: cycles_g")
    if "nodes" in entry:
        params["nodes"] = _parse_nodes(entry["nodes"], where)
    if "cloud" in entry:
        params["cloud"] = _parse_cloud(entry["cloud"], where)
    try:
        scenario = Scenario(catalog=loaded[catalog_name], **params)
    except ScenarioError as exc:
        raise EvalSetError(f"{where}: {exc}") from exc
    episodes = entry.get("episodes")
    if not isinstance(episodes, list) or not episodes:
        raise EvalSetError(f"{where}: 'episodes' must be a non-empty list of {{id, split, seed|key}} tables")
    parsed = tuple(_parse_episode(ep, i, where) for i, ep in enumerate(episodes))
    return EvalScenario(name, weight, scenario, parsed, source)


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


def _parse_episode(raw: Any, index: int, where: str) -> EpisodeSpec:
    if not isinstance(raw, dict):
        raise EvalSetError(f"{where}: episode #{index} must be a table, got {raw!r}")
    no_unknown(raw, {"id", "split", "seed", "key"}, f"{where} episode #{index}")
    key, seed = parse_source(raw, f"{where} episode #{index}")
    episode_id = raw.get("id", f"seed{seed}" if seed is not None else None)
    if episode_id is None:
        raise EvalSetError(f"{where} episode #{index}: a keyed episode needs an 'id'")
    split = raw.get("split", "public")
    if split not in SPLITS:
        raise EvalSetError(f"{where} episode #{index}: split must be 'public' or 'private', got {split!r}")
    check_name(episode_id, f"{where}: episode id")
    return EpisodeSpec(id=episode_id, split=split, seed=seed, key=key)
