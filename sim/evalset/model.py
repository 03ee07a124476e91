"""The validated evaluation set, its scenarios and episodes, and the commitment that pins them."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from layersched.sim.canonical import canonical_json
from layersched.sim.episodes import EpisodeSpec, Split
from layersched.sim.errors import EvalSetError
from layersched.sim.tracks.interface import Track
from layersched.sim.tracks.registry import DEFAULT_TRACK_ID, TrackError, get_track, track_ids
from layersched.sim.tracks.values import check_name, source_json

FORMAT = "layersched-evalset"
FORMAT_VERSION = 1
SPLITS: tuple[Split, ...] = ("public", "private")


@dataclass(frozen=True)
class EvalScenario:
    """One scenario of a set: its weight in the overall score, the track's scenario and its episodes."""

    name: str
    weight: float
    # The track's scenario value: what its simulator runs and its scenario_hash hashes (layers-v1: a Scenario).
    scenario: Any
    episodes: tuple[EpisodeSpec, ...]
    # What the track's schema keeps beside the scenario for the canonical form and the dump, opaque here (layers-v1:
    # where the catalog comes from, a CatalogSource; None for a scenario built in code, pinned by content).
    source: Any = None


class EvalJob(NamedTuple):
    """One episode to run: the scenario it belongs to, its workload source and the track that plays it."""

    scenario_name: str
    scenario: Any
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
        """Whether any episode or any scenario's own part (a hidden catalog) depends on a secret key."""
        track = find_track(self.track)
        return any(ep.hidden for sc in self.scenarios for ep in sc.episodes) or any(
            any(True for _ in track.secret_keys(sc)) for sc in self.scenarios
        )

    def scenario(self, name: str) -> EvalScenario:
        for sc in self.scenarios:
            if sc.name == name:
                return sc
        raise EvalSetError(f"evaluation set {self.name!r} has no scenario {name!r}")

    def _canonical(self, *, public: bool) -> dict[str, Any]:
        track = find_track(self.track)
        out = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "name": self.name,
            "description": self.description,
            "scenarios": [_scenario_canonical(track, sc, public=public) for sc in self.scenarios],
        }
        out.update(_track_part(track.tables_canonical(self.scenarios, public=public), out, "top level"))
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
    track = find_track(evalset.track)
    seen: set[str] = set()
    keys: dict[bytes, str] = {}
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
        for key, what in track.secret_keys(sc):
            _claim_key(keys, key, what)
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
    track.check_scenarios(evalset.scenarios)


def _claim_key(keys: dict[bytes, str], key: bytes, where: str) -> None:
    # Scenarios that share one catalog name its key once each: the same purpose, not a second one.
    if keys.get(key, where) != where:
        # The same key twice is a copy-paste slip that would correlate two supposedly independent draws.
        raise EvalSetError(f"{where}: key is already used by {keys[key]}")
    keys[key] = where


def _scenario_canonical(track: Track, sc: EvalScenario, *, public: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": sc.name, "weight": float(sc.weight)}
    out["episodes"] = [episode_json(ep, public=public) for ep in sc.episodes]
    out.update(_track_part(track.scenario_canonical(sc, public=public), out, f"scenario {sc.name!r}"))
    return out


def _track_part(part: dict[str, Any], shared: dict[str, Any], where: str) -> dict[str, Any]:
    # A track that used a shared key would overwrite what the shared code commits to.
    clash = sorted(set(part) & set(shared))
    if clash:
        raise EvalSetError(f"{where}: the track's canonical form uses the shared key {clash[0]!r}")
    return part


def episode_json(ep: EpisodeSpec, *, public: bool) -> dict[str, Any]:
    return {"id": ep.id, "split": ep.split, **source_json(ep.seed, ep.key, public=public)}


def iter_keys(evalset: EvalSet) -> Iterator[bytes]:
    """Every secret key of the set (for tests and audits; never log the result)."""
    track = find_track(evalset.track)
    for sc in evalset.scenarios:
        for key, _ in track.secret_keys(sc):
            yield key
        for ep in sc.episodes:
            if ep.key is not None:
                yield ep.key
