"""The validated evaluation set, its scenarios and episodes, and the commitment that pins them."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from layersched.sim.catalog import canonical_json
from layersched.sim.episodes import EpisodeSpec, Split
from layersched.sim.errors import EvalSetError
from layersched.sim.evalset.sources import CatalogSource
from layersched.sim.evalset.values import check_name
from layersched.sim.scenario import Scenario
from layersched.sim.tracks.interface import Track
from layersched.sim.tracks.registry import DEFAULT_TRACK_ID, TrackError, get_track, track_ids
from layersched.sim.workload import draw_nodes

FORMAT = "layersched-evalset"
FORMAT_VERSION = 1
SPLITS: tuple[Split, ...] = ("public", "private")


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
    """One episode to run: the scenario it belongs to, its workload source and the track that plays it."""

    scenario_name: str
    scenario: Scenario
    episode: EpisodeSpec
    track: str = DEFAULT_TRACK_ID


@dataclass(frozen=True)
class EvalSet:
    """A validated evaluation set: ``commitment`` identifies it, ``public_view()`` is what students see."""

    name: str
    scenarios: tuple[EvalScenario, ...]
    description: str = ""
    # The track whose problem the scenarios are (``layersched.sim.tracks``); a file without one means layers-v1.
    track: str = DEFAULT_TRACK_ID

    def __post_init__(self) -> None:
        find_track(self.track)
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
            EvalJob(sc.name, sc.scenario, ep, self.track)
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
        out = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "name": self.name,
            "description": self.description,
            "catalogs": catalogs,
            "scenarios": [sc.canonical(public=public) for sc in self.scenarios],
        }
        # Only another track is spelled out: a set of the default track hashes as it did before tracks existed, so
        # every commitment published until then still verifies.
        if self.track != DEFAULT_TRACK_ID:
            out["track"] = self.track
        return out

    def __repr__(self) -> str:  # never print keys
        n = sum(len(sc.episodes) for sc in self.scenarios)
        return f"EvalSet(name={self.name!r}, scenarios={len(self.scenarios)}, episodes={n})"


def find_track(track_id: object) -> Track:
    """The registered track ``track_id``; an ``EvalSetError`` names the value and lists the known tracks."""
    if not isinstance(track_id, str):
        raise EvalSetError(f"track must be a track id such as {DEFAULT_TRACK_ID!r}, got {track_id!r}")
    try:
        return get_track(track_id)
    except TrackError as exc:
        if track_id in track_ids():  # known, but its module is broken: say so rather than "unknown"
            raise EvalSetError(f"track {track_id!r}: {exc}") from exc
        raise EvalSetError(f"unknown track {track_id!r}; known tracks: {', '.join(track_ids())}") from exc


def _check_set(evalset: EvalSet) -> None:
    check_name(evalset.name, "evaluation set name")
    if not evalset.scenarios:
        raise EvalSetError(f"evaluation set {evalset.name!r} has no scenarios")
    seen: set[str] = set()
    keys: dict[bytes, str] = {}
    sources: dict[str, CatalogSource] = {}
    for sc in evalset.scenarios:
        check_name(sc.name, "scenario name")
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
            check_name(ep.id, f"scenario {sc.name!r}: episode id")
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


def _floats(pair: tuple[float, float]) -> list[float]:
    return [float(pair[0]), float(pair[1])]


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


def iter_keys(evalset: EvalSet) -> Iterator[bytes]:
    """Every secret key of the set (for tests and audits; never log the result)."""
    for sc in evalset.scenarios:
        if sc.source is not None and sc.source.key is not None:
            yield sc.source.key
        for ep in sc.episodes:
            if ep.key is not None:
                yield ep.key
