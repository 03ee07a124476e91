"""Evaluation sets: the scenarios and episodes a submission is scored on, and the commitment that pins them.

An evaluation set is a TOML file (the format is documented in ``hidden_seeds/README.md``)::

    format = "layersched-evalset"
    version = 1
    name = "sample"

    [catalogs.hidden-a]             # optional: catalogs other than the built-in ones
    kind = "synthetic"              # or "file" (with file = "catalogs/x.json", relative to this file)
    key = "<64 hex digits>"         # secret; or seed = 7 for a public synthetic catalog
    n_images = 80

    [[scenario]]
    name = "lab-300"
    weight = 1.0
    catalog = "lab"                 # a built-in name or a key of [catalogs]
    n_tasks = 300
    episodes = [{ seed = 0 }, { id = "h1", split = "private", key = "<hex>" }]

The **commitment** is the SHA-256 of the set's canonical form (``canonical_json`` of ``EvalSet.canonical()``):
every key, seed, parameter and the content hash of every built-in or file catalog. Organisers publish it
before the challenge and the file after it; ``verify_evalset`` lets anyone check that nothing changed in between.

A *template* (``template = true``) has the same layout but asks for keys instead of holding them:
``generate = {public = 5, private = 20}`` in a scenario and ``key = "generate"`` in a synthetic catalog.
``new_evalset`` turns it into a real set with fresh keys, written where git ignores it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import math
import os
import random
import re
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

from layersched.sim.baselines import BASELINES, Policy
from layersched.sim.catalog import (
    BUILTIN_CATALOGS,
    Catalog,
    CatalogStructure,
    canonical_json,
    load_catalog,
    synthetic_catalog,
)
from layersched.sim.env import ClusterEnv
from layersched.sim.episode import run_episode
from layersched.sim.episodes import EpisodeSpec, Split, policy_seed
from layersched.sim.errors import CatalogError, EvalSetError, ScenarioError
from layersched.sim.keyed_random import MIN_KEY_BYTES, KeyedRandom
from layersched.sim.ordered_pool import Progress, map_ordered
from layersched.sim.replay import ReplayEnv
from layersched.sim.scenario import CloudNode, NodeRanges, Scenario
from layersched.sim.scoring import REFERENCE, ScenarioEpisodes, Score, pair_episodes, score
from layersched.sim.version import RULES_HASH, SIM_VERSION
from layersched.sim.workload import draw_nodes

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 needs the tomli backport
    import tomli as tomllib

FORMAT = "layersched-evalset"
FORMAT_VERSION = 1
KEY_BYTES = 32  # fresh keys are 256 bits; files may hold any key of at least MIN_KEY_BYTES
GENERATE = "generate"
SPLITS: tuple[Split, ...] = ("public", "private")
# Names end up in URLs, database rows and file names.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_HEX = re.compile(r"[0-9a-f]*")
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
_TOP_KEYS = {"format", "version", "name", "description", "catalogs", "scenario", "template"}


# The public sample set, shipped in the package (hidden_seeds/sample.toml links to it): the server's public board
# scores on it by default and ``layersched validate`` scores on it, so their episodes and numbers are the same.
SAMPLE_PATH = Path(__file__).resolve().parent / "data" / "sample.toml"
BUILTIN_SETS: Mapping[str, Path] = {"sample": SAMPLE_PATH}


# ------------------------------------------------------------------------------------------------ the model


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
        out: dict[str, Any] = {"kind": "synthetic", "structure": _structure_json(self.structure)}
        if self.seed is not None:
            out["seed"] = self.seed
        elif public:
            out["hidden"] = True
        else:
            assert self.key is not None
            out["key"] = self.key.hex()
        return out


@dataclass(frozen=True)
class EvalScenario:
    """One scenario of a set: its weight in the overall score, the simulated cluster and its episodes."""

    name: str
    weight: float
    scenario: Scenario
    episodes: tuple[EpisodeSpec, ...]
    source: CatalogSource | None = None

    def canonical(self, *, public: bool = False) -> dict[str, Any]:
        sc = self.scenario
        return {
            "name": self.name,
            "weight": float(self.weight),
            "catalog": self.source.name if self.source is not None else sc.catalog.name,
            "n_nodes": sc.n_nodes,
            "n_tasks": sc.n_tasks,
            "arrival_rate": float(sc.arrival_rate),
            "slots": sc.slots,
            "nodes": {
                "bandwidth_mbps": _floats(sc.nodes.bandwidth_mbps),
                "freq_ghz": _floats(sc.nodes.freq_ghz),
                "storage_gb": _floats(sc.nodes.storage_gb),
            },
            "cycles_g": _floats(sc.cycles_g),
            "zipf_s": float(sc.zipf_s),
            "cloud": None
            if sc.cloud is None
            else {"bandwidth_mbps": float(sc.cloud.bandwidth_mbps), "freq_ghz": float(sc.cloud.freq_ghz)},
            "episodes": [_episode_json(ep, public=public) for ep in self.episodes],
        }


class EvalJob(NamedTuple):
    """One episode to run: the scenario it belongs to and its workload source."""

    scenario_name: str
    scenario: Scenario
    episode: EpisodeSpec


@dataclass(frozen=True)
class EvalSet:
    """A validated evaluation set: ``commitment`` identifies it, ``public_view()`` is what students see."""

    name: str
    scenarios: tuple[EvalScenario, ...]
    description: str = ""

    def __post_init__(self) -> None:
        _check_set(self)

    def canonical(self) -> dict[str, Any]:
        """The form the commitment is computed over, secret keys included."""
        return self._canonical(public=False)

    @property
    def commitment(self) -> str:
        """SHA-256 (hex) of ``canonical_json(self.canonical())``."""
        return hashlib.sha256(canonical_json(self.canonical())).hexdigest()

    def public_view(self) -> dict[str, Any]:
        """Everything but the keys: scenarios, weights, episode ids and splits, lab seeds, the commitment."""
        view = self._canonical(public=True)
        view["commitment"] = self.commitment
        return view

    def jobs(self, split: Split | None = None) -> list[EvalJob]:
        """Every (scenario name, Scenario, EpisodeSpec) to run, in file order, optionally of one split."""
        if split is not None and split not in SPLITS:
            raise EvalSetError(f"split must be 'public' or 'private', got {split!r}")
        return [
            EvalJob(sc.name, sc.scenario, ep)
            for sc in self.scenarios
            for ep in sc.episodes
            if split is None or ep.split == split
        ]

    @property
    def weights(self) -> dict[str, float]:
        return {sc.name: sc.weight for sc in self.scenarios}

    @property
    def hidden(self) -> bool:
        """Whether any episode or catalog depends on a secret key."""
        return any(ep.hidden for sc in self.scenarios for ep in sc.episodes) or any(
            sc.source is not None and sc.source.key is not None for sc in self.scenarios
        )

    def scenario(self, name: str) -> EvalScenario:
        for sc in self.scenarios:
            if sc.name == name:
                return sc
        raise EvalSetError(f"evaluation set {self.name!r} has no scenario {name!r}")

    def _canonical(self, *, public: bool) -> dict[str, Any]:
        catalogs: dict[str, Any] = {}
        for sc in self.scenarios:
            if sc.source is None:  # built in code from a Catalog object: pinned by content only
                inline = {"kind": "inline", "sha256": sc.scenario.catalog.content_hash}
                catalogs.setdefault(sc.scenario.catalog.name, inline)
            else:
                catalogs.setdefault(sc.source.name, sc.source.canonical(sc.scenario.catalog, public=public))
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "name": self.name,
            "description": self.description,
            "catalogs": catalogs,
            "scenarios": [sc.canonical(public=public) for sc in self.scenarios],
        }

    def __repr__(self) -> str:  # never print keys
        n = sum(len(sc.episodes) for sc in self.scenarios)
        return f"EvalSet(name={self.name!r}, scenarios={len(self.scenarios)}, episodes={n})"


def _check_set(evalset: EvalSet) -> None:
    _check_name(evalset.name, "evaluation set name")
    if not evalset.scenarios:
        raise EvalSetError(f"evaluation set {evalset.name!r} has no scenarios")
    seen: set[str] = set()
    keys: dict[bytes, str] = {}
    sources: dict[str, CatalogSource] = {}
    for sc in evalset.scenarios:
        _check_name(sc.name, "scenario name")
        if sc.name in seen:
            raise EvalSetError(f"scenario name {sc.name!r} appears twice")
        seen.add(sc.name)
        weight: object = sc.weight
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight < math.inf:
            raise EvalSetError(f"scenario {sc.name!r}: weight must be a positive finite number, got {weight!r}")
        if not sc.episodes:
            raise EvalSetError(f"scenario {sc.name!r} has no episodes")
        if sc.source is not None and sc.source.name not in sources:
            sources[sc.source.name] = sc.source
            if sc.source.key is not None:
                _claim_key(keys, sc.source.key, f"catalog {sc.source.name!r}")
        elif sc.source is not None and sources[sc.source.name] != sc.source:
            raise EvalSetError(f"scenario {sc.name!r}: catalog name {sc.source.name!r} names two catalogs")
        ids: set[str] = set()
        seeds: set[int] = set()
        for ep in sc.episodes:
            where = f"scenario {sc.name!r} episode {ep.id!r}"
            _check_name(ep.id, f"scenario {sc.name!r}: episode id")
            if ep.id in ids:
                raise EvalSetError(f"scenario {sc.name!r}: episode id {ep.id!r} appears twice")
            ids.add(ep.id)
            if ep.seed is not None:
                if ep.seed in seeds:
                    raise EvalSetError(f"{where}: seed {ep.seed} is used twice in this scenario")
                seeds.add(ep.seed)
            if ep.key is not None:
                _claim_key(keys, ep.key, where)
        _check_playable(sc)


def _check_playable(sc: EvalScenario) -> None:
    """Every image must fit on some node of every episode, or the episode has a task no policy can place.

    ``Scenario`` only checks the largest storage nodes *can* get; the nodes an episode actually draws may all be
    smaller. Drawing the nodes is the first thing an episode does, so this costs a few draws per episode.
    """
    scenario = sc.scenario
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


def _claim_key(keys: dict[bytes, str], key: bytes, where: str) -> None:
    if key in keys:
        # The same key twice is a copy-paste slip that would correlate two supposedly independent draws.
        raise EvalSetError(f"{where}: key is already used by {keys[key]}")
    keys[key] = where


def _check_name(value: object, what: str) -> None:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise EvalSetError(
            f"{what} must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit, got {value!r}"
        )


def _floats(pair: tuple[float, float]) -> list[float]:
    return [float(pair[0]), float(pair[1])]


def _structure_json(structure: CatalogStructure) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in dataclasses.asdict(structure).items():
        if name.endswith("_mb"):
            out[name] = [float(v) for v in value]
        else:
            out[name] = list(value) if isinstance(value, tuple) else value
    return out


def _episode_json(ep: EpisodeSpec, *, public: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"id": ep.id, "split": ep.split}
    if ep.seed is not None:
        out["seed"] = ep.seed
    elif public:
        out["hidden"] = True
    else:
        assert ep.key is not None
        out["key"] = ep.key.hex()
    return out


# ------------------------------------------------------------------------------------------------ parsing


def load_evalset(path: str | Path) -> EvalSet:
    """Read and validate an evaluation-set file; an ``EvalSetError`` names the file and the bad value."""
    path = Path(path)
    raw = _read_toml(path)
    if raw.get("template") is True:
        raise EvalSetError(
            f"{path}: this is a template without keys; create a real set with "
            f"`layersched admin evalset new --from {path} --out hidden_seeds/private/NAME.toml`"
        )
    return _prefixed(path, lambda: parse_evalset(raw, base_dir=path.parent))


def evalset_file(name_or_path: str | Path) -> Path:
    """The file of a built-in set's name (``sample``; a name wins over a file of that name) or of a path.

    Raises ``EvalSetError`` naming the value when it is neither.
    """
    builtin = BUILTIN_SETS.get(str(name_or_path))
    if builtin is not None:
        return builtin
    path = Path(name_or_path)
    if not path.is_file():
        names = ", ".join(sorted(BUILTIN_SETS))
        raise EvalSetError(f"no evaluation set {str(name_or_path)!r}: not a file, and not a built-in set ({names})")
    return path


def verify_evalset(path: str | Path, commitment: str) -> bool:
    """Whether the set in ``path`` (with its catalog files) has the published ``commitment``."""
    commitment = commitment.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{64}", commitment):
        raise EvalSetError(f"a commitment is 64 hex digits (SHA-256), got {commitment!r}")
    return hmac.compare_digest(load_evalset(path).commitment, commitment)


def parse_evalset(raw: Mapping[str, Any], *, base_dir: Path) -> EvalSet:
    """Build an ``EvalSet`` from parsed TOML; catalog files are resolved against ``base_dir``."""
    _no_unknown(raw, _TOP_KEYS, "top level")
    if raw.get("format") != FORMAT:
        raise EvalSetError(f"format must be {FORMAT!r}, got {raw.get('format')!r}")
    if raw.get("version") != FORMAT_VERSION:
        raise EvalSetError(f"version must be {FORMAT_VERSION}, got {raw.get('version')!r}")
    if raw.get("template", False) is not False:
        raise EvalSetError(f"template must be true or absent, got {raw.get('template')!r}")
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise EvalSetError(f"description must be a string, got {description!r}")
    sources = _parse_catalog_sources(raw.get("catalogs", {}))
    loaded: dict[str, Catalog] = {}
    raw_scenarios = raw.get("scenario")
    if not isinstance(raw_scenarios, list) or not raw_scenarios:
        raise EvalSetError("an evaluation set needs at least one [[scenario]] table")
    scenarios = [_parse_scenario(entry, i, sources, loaded, base_dir) for i, entry in enumerate(raw_scenarios)]
    name = raw.get("name")
    _check_name(name, "evaluation set name")
    assert isinstance(name, str)
    return EvalSet(name=name, scenarios=tuple(scenarios), description=description)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            data: dict[str, Any] = tomllib.load(fh)
            return data
    except OSError as exc:
        raise EvalSetError(f"cannot read evaluation set {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise EvalSetError(f"{path}: not valid TOML ({exc})") from exc


def _prefixed(path: Path, build: Callable[[], EvalSet]) -> EvalSet:
    try:
        return build()
    except EvalSetError as exc:
        raise EvalSetError(f"{path}: {exc}") from exc


def _no_unknown(table: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise EvalSetError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")


def _parse_catalog_sources(raw: Any) -> dict[str, CatalogSource]:
    if not isinstance(raw, dict):
        raise EvalSetError(f"[catalogs] must be a table of catalog definitions, got {raw!r}")
    sources = {}
    for name, table in raw.items():
        _check_name(name, "catalog name")
        where = f"catalog {name!r}"
        if name in BUILTIN_CATALOGS:
            raise EvalSetError(f"{where}: this name is built in; choose another name")
        if not isinstance(table, dict):
            raise EvalSetError(f"{where}: expected a table, got {table!r}")
        kind = table.get("kind")
        if kind == "file":
            _no_unknown(table, {"kind", "file", "sha256"}, where)
            path = table.get("file")
            if not isinstance(path, str) or not path:
                raise EvalSetError(f"{where}: 'file' must be a path relative to the set's file, got {path!r}")
            pin = table.get("sha256")
            if pin is not None and not (isinstance(pin, str) and re.fullmatch(r"[0-9a-f]{64}", pin)):
                raise EvalSetError(f"{where}: 'sha256' must be 64 lowercase hex digits, got {pin!r}")
            sources[name] = CatalogSource(name, "file", path=path, sha256=pin)
        elif kind == "synthetic":
            _no_unknown(table, {"kind", "key", "seed", *_STRUCTURE_FIELDS}, where)
            key, seed = _parse_source(table, where)
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
            values[name] = _int(value, f"{where}: {name}", minimum=1)
        elif name.endswith("_layers"):
            lo, hi = _pair(value, f"{where}: {name}")
            if lo != int(lo) or hi != int(hi):
                raise EvalSetError(f"{where}: {name} must be a pair of integers, got {value!r}")
            values[name] = (int(lo), int(hi))
        else:
            values[name] = _pair(value, f"{where}: {name}")
    structure = CatalogStructure(**values)
    try:
        structure.validate()
    except CatalogError as exc:
        raise EvalSetError(f"{where}: {exc}") from exc
    return structure


def _parse_source(table: Mapping[str, Any], where: str) -> tuple[bytes | None, int | None]:
    """Exactly one of ``key`` (hex) and ``seed`` (a non-negative int)."""
    has_key, has_seed = "key" in table, "seed" in table
    if has_key == has_seed:
        raise EvalSetError(f"{where}: give exactly one of 'key' (hidden) and 'seed' (public)")
    if has_seed:
        return None, _int(table["seed"], f"{where}: seed", minimum=0)
    return _parse_key(table["key"], where), None


def _parse_key(value: Any, where: str) -> bytes:
    if value == GENERATE:
        raise EvalSetError(f"{where}: key = {GENERATE!r} is only allowed in a template")
    if not isinstance(value, str) or not _HEX.fullmatch(value) or len(value) % 2:
        raise EvalSetError(f"{where}: key must be lowercase hex digits, got {_short(value)}")
    if len(value) < 2 * MIN_KEY_BYTES:
        raise EvalSetError(
            f"{where}: key must be at least {2 * MIN_KEY_BYTES} hex digits ({8 * MIN_KEY_BYTES} bits), got {len(value)}"
        )
    return bytes.fromhex(value)


def _short(value: Any) -> str:
    # A malformed key is still probably a secret: show its type and length, not its digits.
    return f"a {type(value).__name__} of length {len(value)}" if isinstance(value, str) else repr(value)


def _int(value: Any, where: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise EvalSetError(f"{where} must be an integer >= {minimum}, got {value!r}")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise EvalSetError(f"{where} must be a finite number, got {value!r}")
    return float(value)


def _pair(value: Any, where: str) -> tuple[float, float]:
    if not isinstance(value, list) or len(value) != 2:
        raise EvalSetError(f"{where} must be a pair [lo, hi], got {value!r}")
    return _number(value[0], where), _number(value[1], where)


def _parse_scenario(
    entry: Any, index: int, sources: dict[str, CatalogSource], loaded: dict[str, Catalog], base_dir: Path
) -> EvalScenario:
    if not isinstance(entry, dict):
        raise EvalSetError(f"scenario #{index}: expected a table, got {entry!r}")
    name = entry.get("name")
    _check_name(name, f"scenario #{index}: name")
    assert isinstance(name, str)
    where = f"scenario {name!r}"
    _no_unknown(entry, _SCENARIO_KEYS, where)
    weight = _number(entry.get("weight", 1.0), f"{where}: weight")
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
            params[key] = _int(entry[key], f"{where}: {key}", minimum=1)
    for key in ("arrival_rate", "zipf_s"):
        if key in entry:
            params[key] = _number(entry[key], f"{where}: {key}")
    if "cycles_g" in entry:
        params["cycles_g"] = _pair(entry["cycles_g"], f"{where}: cycles_g")
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
    _no_unknown(raw, allowed, f"{where}: nodes")
    return NodeRanges(**{k: _pair(v, f"{where}: nodes.{k}") for k, v in raw.items()})


def _parse_cloud(raw: Any, where: str) -> CloudNode | None:
    if raw is True:
        return CloudNode()
    if raw is False:
        return None
    if not isinstance(raw, dict):
        raise EvalSetError(f"{where}: cloud must be true, false or a table, got {raw!r}")
    _no_unknown(raw, {"bandwidth_mbps", "freq_ghz"}, f"{where}: cloud")
    return CloudNode(**{k: _number(v, f"{where}: cloud.{k}") for k, v in raw.items()})


def _parse_episode(raw: Any, index: int, where: str) -> EpisodeSpec:
    if not isinstance(raw, dict):
        raise EvalSetError(f"{where}: episode #{index} must be a table, got {raw!r}")
    _no_unknown(raw, {"id", "split", "seed", "key"}, f"{where} episode #{index}")
    key, seed = _parse_source(raw, f"{where} episode #{index}")
    episode_id = raw.get("id", f"seed{seed}" if seed is not None else None)
    if episode_id is None:
        raise EvalSetError(f"{where} episode #{index}: a keyed episode needs an 'id'")
    split = raw.get("split", "public")
    if split not in SPLITS:
        raise EvalSetError(f"{where} episode #{index}: split must be 'public' or 'private', got {split!r}")
    _check_name(episode_id, f"{where}: episode id")
    return EpisodeSpec(id=episode_id, split=split, seed=seed, key=key)


# ------------------------------------------------------------------------------------------------ writing


def dump_evalset(evalset: EvalSet, *, catalog_files: Mapping[str, str] | None = None) -> str:
    """The set as a TOML document that ``load_evalset`` reads back to the same commitment.

    ``catalog_files`` maps a file catalog's name to its path relative to where the document will be saved.
    """
    files = dict(catalog_files or {})
    for sc in evalset.scenarios:
        if sc.source is None and sc.scenario.catalog.name not in BUILTIN_CATALOGS:
            raise EvalSetError(f"scenario {sc.name!r}: catalog {sc.scenario.catalog.name!r} has no source to write")
    header = (
        "# layersched evaluation set with secret keys: never commit it before the organisers reveal it."
        if evalset.hidden
        else "# layersched evaluation set (no secret keys)."
    )
    lines = [
        header,
        f"format = {_toml(FORMAT)}",
        f"version = {FORMAT_VERSION}",
        f"name = {_toml(evalset.name)}",
        f"description = {_toml(evalset.description)}",
    ]
    written: set[str] = set()
    for sc in evalset.scenarios:
        src = sc.source
        if src is None or src.kind == "builtin" or src.name in written:
            continue
        written.add(src.name)
        lines += ["", f"[catalogs.{src.name}]", f"kind = {_toml(src.kind)}"]
        if src.kind == "file":
            lines.append(f"file = {_toml(files.get(src.name, src.path))}")
            lines.append(f"sha256 = {_toml(sc.scenario.catalog.content_hash)}")
        else:
            lines.append(f"key = {_toml(src.key.hex())}" if src.key is not None else f"seed = {src.seed}")
            lines += [f"{k} = {_toml(v)}" for k, v in _structure_json(src.structure).items()]
    for sc in evalset.scenarios:
        data = sc.canonical()
        lines += ["", "[[scenario]]"]
        for key in ("name", "weight", "catalog", "n_nodes", "n_tasks", "arrival_rate", "slots", "cycles_g"):
            lines.append(f"{key} = {_toml(data[key])}")
        lines.append(f"zipf_s = {_toml(data['zipf_s'])}")
        lines.append(f"nodes = {_toml(data['nodes'])}")
        if data["cloud"] is not None:
            lines.append(f"cloud = {_toml(data['cloud'])}")
        lines.append("episodes = [")
        lines += [f"    {_toml(ep)}," for ep in data["episodes"]]
        lines.append("]")
    return "\n".join(lines) + "\n"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)  # repr of a finite float round-trips exactly
    if isinstance(value, str):
        # A JSON string is a TOML basic string, once DEL (which JSON leaves raw) is escaped too.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {value!r} as TOML")


def new_evalset(
    template_path: str | Path, out_path: str | Path, *, name: str | None = None, allow_tracked: bool = False
) -> EvalSet:
    """Create a real set from a template with fresh secret keys and write it to ``out_path``; returns the set.

    ``name`` (default: the template's) is the set's name, the one the board shows and ``rerun --evalset`` takes.

    Every ``generate = {public = N, private = M}`` becomes N + M keyed episodes and every ``key = "generate"``
    a fresh catalog key, each ``secrets.token_bytes(32)``. The file is created with mode 0600, never
    overwritten, and unless ``allow_tracked`` it must be ignored by git (``hidden_seeds/private/`` is).
    """
    template_path, out_path = Path(template_path), Path(out_path)
    raw = _read_toml(template_path)
    if raw.get("template") is not True:
        raise EvalSetError(f"{template_path}: not a template (a template has `template = true`)")
    try:
        real = _fill_template(raw)
    except EvalSetError as exc:
        raise EvalSetError(f"{template_path}: {exc}") from exc
    if name is not None:
        real["name"] = name
    evalset = _prefixed(template_path, lambda: parse_evalset(real, base_dir=template_path.parent))
    if out_path.exists():
        raise EvalSetError(f"{out_path} already exists; refusing to overwrite an evaluation set")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    if not allow_tracked and _git_tracks(out_path):
        raise EvalSetError(
            f"{out_path} is not ignored by git; write real sets under hidden_seeds/private/ (or add the path "
            "to .gitignore) so their keys are never committed"
        )
    # Catalog files stay where they are: the new file refers to them relative to its own folder.
    files = {
        sc.source.name: os.path.relpath(template_path.parent / sc.source.path, out_path.parent)
        for sc in evalset.scenarios
        if sc.source is not None and sc.source.kind == "file" and sc.source.path is not None
    }
    text = dump_evalset(evalset, catalog_files=files)
    fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    written = load_evalset(out_path)
    if written.commitment != evalset.commitment:  # the writer and the reader disagree: a bug, never publish it
        raise EvalSetError(f"{out_path}: the written set does not read back to the same commitment")
    return written


def _fill_template(raw: Mapping[str, Any]) -> dict[str, Any]:
    # Anything malformed is left as it is for parse_evalset to report.
    real = {k: v for k, v in raw.items() if k != "template"}
    if isinstance(raw.get("catalogs"), dict):
        catalogs = {}
        for name, table in raw["catalogs"].items():
            if isinstance(table, dict) and table.get("key") == GENERATE:
                table = {**table, "key": secrets.token_bytes(KEY_BYTES).hex()}
            catalogs[name] = table
        real["catalogs"] = catalogs
    if not isinstance(raw.get("scenario"), list):
        return real
    scenarios = []
    for i, entry in enumerate(raw["scenario"]):
        if not isinstance(entry, dict):
            scenarios.append(entry)
            continue
        entry = dict(entry)
        where = f"scenario {entry.get('name', f'#{i}')!r}"
        generate = entry.pop("generate", {})
        if not isinstance(generate, dict) or set(generate) - set(SPLITS):
            raise EvalSetError(f"{where}: generate must be a table like {{public = 5, private = 20}}, got {generate!r}")
        episodes = list(entry.get("episodes", []))
        for split in SPLITS:
            count = _int(generate.get(split, 0), f"{where}: generate.{split}", minimum=0)
            prefix = "pub" if split == "public" else "prv"
            episodes += [
                {"id": f"{prefix}{k:03d}", "split": split, "key": secrets.token_bytes(KEY_BYTES).hex()}
                for k in range(count)
            ]
        entry["episodes"] = episodes
        scenarios.append(entry)
    real["scenario"] = scenarios
    return real


def _git_tracks(path: Path) -> bool:
    """True when ``path`` is inside a git work tree and not ignored (git missing or no repository: False)."""
    try:
        result = subprocess.run(
            ["git", "check-ignore", "-q", path.name],
            cwd=path.parent,
            capture_output=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 1  # 0: ignored, 1: not ignored, 128: not a repository


# ------------------------------------------------------------------------------------------------ running


@dataclass(frozen=True)
class EpisodeRecord:
    """One episode's outcome, as stored and cached: the lab's metric plus the tail and the cloud share."""

    scenario: str
    episode: str
    split: Split
    mean_completion: float
    p95_completion: float
    cloud_share: float
    trace_hash: str


def baseline_bundle_id(name: str) -> str:
    """The stand-in for a bundle's SHA-256 that seeds a baseline's ``rng`` through ``policy_seed``."""
    return hashlib.sha256(f"layersched-baseline\0{name}".encode()).hexdigest()


def evaluate_policy(
    evalset: EvalSet, policy: Policy, *, bundle_id: str, split: Split | None = None
) -> list[EpisodeRecord]:
    """Run ``policy`` in-process on every episode (of one split); its rng is seeded by ``policy_seed``."""
    envs: dict[str, ClusterEnv] = {}
    hashes = _scenario_hashes(evalset)
    return [
        _run_job(
            envs.setdefault(job.scenario_name, ClusterEnv(job.scenario)),
            policy,
            job,
            job.episode.workload_rng(),
            policy_seed(bundle_id, hashes[job.scenario_name], job.episode.id),
        )
        for job in evalset.jobs(split)
    ]


def _scenario_hashes(evalset: EvalSet) -> dict[str, str]:
    """Each scenario's ``content_hash``, computed once (it serialises the whole catalog)."""
    return {sc.name: sc.scenario.content_hash for sc in evalset.scenarios}


def _run_job(env: ClusterEnv, policy: Policy, job: EvalJob, workload: random.Random, seed: int) -> EpisodeRecord:
    result = run_episode(env, policy, workload, random.Random(seed))
    m = result.metrics
    return EpisodeRecord(
        job.scenario_name,
        job.episode.id,
        job.episode.split,
        m.mean_completion,
        m.p95_completion,
        m.cloud_share,
        result.trace_hash,
    )


def _baselines_on_job(context: tuple[EvalSet, dict[str, str]], index: int) -> list[EpisodeRecord]:
    """Every baseline's record on the set's ``index``-th episode, in ``BASELINES`` order (one piece of the pool)."""
    evalset, hashes = context
    job = evalset.jobs()[index]
    env = ReplayEnv(job.scenario)
    workload = job.episode.workload_rng()  # drawn by the first baseline, replayed for the others
    return [
        _run_job(
            env, policy, job, workload, policy_seed(baseline_bundle_id(name), hashes[job.scenario_name], job.episode.id)
        )
        for name, policy in BASELINES.items()
    ]


def score_baselines(
    evalset: EvalSet,
    cache_dir: str | Path | None = None,
    *,
    workers: int = 1,
    progress: Progress | None = None,
) -> dict[str, list[EpisodeRecord]]:
    """Every baseline's episode records on every episode of ``evalset``, keyed by baseline name.

    Results are cached as JSON in ``cache_dir`` under the set's commitment and ``SIM_VERSION``; a cache
    written by other rules (``RULES_HASH``) is recomputed. Score them with ``layersched.sim.scoring`` against Greedy.
    Episodes are independent: ``workers`` processes share them (the records are the same for any number), and
    ``progress(done, total)`` hears of each finished episode; neither is called when the cache answers.
    """
    path = None
    if cache_dir is not None:
        path = Path(cache_dir) / f"baselines-{evalset.commitment}-{SIM_VERSION}.json"
        cached = _read_cache(path, evalset.commitment)
        if cached is not None:
            return cached
    context = (evalset, _scenario_hashes(evalset))
    per_job = map_ordered(_baselines_on_job, context, len(evalset.jobs()), workers=workers, progress=progress)
    out = {name: [records[k] for records in per_job] for k, name in enumerate(BASELINES)}
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "sim_version": SIM_VERSION,
            "rules_hash": RULES_HASH,
            "commitment": evalset.commitment,
            "baselines": {name: [dataclasses.asdict(r) for r in recs] for name, recs in out.items()},
        }
        tmp = path.with_suffix(f".{os.getpid()}.tmp")  # one per writer: two workers may fill the cache at once
        tmp.write_text(json.dumps(payload, indent=1), encoding="utf-8")
        tmp.replace(path)  # atomic: a concurrent reader sees the old file or the whole new one
    return out


def paired_scenarios(
    evalset: EvalSet,
    records: Sequence[EpisodeRecord],
    reference: Sequence[EpisodeRecord],
    split: Split | None = None,
) -> list[ScenarioEpisodes]:
    """A submission's records paired episode by episode with Greedy's (``reference``), ready for ``scoring``.

    Only the episodes of ``split`` count (both splits if None); a missing episode raises ``ValueError``.
    """
    wanted = {(job.scenario_name, job.episode.id) for job in evalset.jobs(split)}
    paired: list[ScenarioEpisodes] = pair_episodes(
        evalset.weights,
        {(r.scenario, r.episode): r.mean_completion for r in records if (r.scenario, r.episode) in wanted},
        {(r.scenario, r.episode): r.mean_completion for r in reference if (r.scenario, r.episode) in wanted},
    )
    return paired


def baseline_scores(
    evalset: EvalSet, cache_dir: str | Path | None = None, split: Split | None = None
) -> dict[str, Score]:
    """The reference rows of a leaderboard: each baseline's score (ratio to Greedy) on ``split``."""
    records = score_baselines(evalset, cache_dir)
    return {name: score(paired_scenarios(evalset, recs, records[REFERENCE], split)) for name, recs in records.items()}


def _read_cache(path: Path, commitment: str) -> dict[str, list[EpisodeRecord]] | None:
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (
        payload.get("rules_hash") != RULES_HASH
        or payload.get("commitment") != commitment
        or set(payload.get("baselines", {})) != set(BASELINES)
    ):
        return None
    return {name: [EpisodeRecord(**r) for r in recs] for name, recs in payload["baselines"].items()}


def iter_keys(evalset: EvalSet) -> Iterator[bytes]:
    """Every secret key of the set (for tests and audits; never log the result)."""
    for sc in evalset.scenarios:
        if sc.source is not None and sc.source.key is not None:
            yield sc.source.key
        for ep in sc.episodes:
            if ep.key is not None:
                yield ep.key
