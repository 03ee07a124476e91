"""A ``[[scenario]]`` table: its name, weight and episodes; the rest of it is the track's (``Track.parse_scenario``)."""

from __future__ import annotations

from typing import Any

from layersched.sim.episodes import EpisodeSpec
from layersched.sim.errors import EvalSetError
from layersched.sim.evalset.model import SPLITS, EvalScenario
from layersched.sim.tracks.interface import Track
from layersched.sim.tracks.values import check_name, no_unknown, number, parse_source

SHARED_KEYS = frozenset({"name", "weight", "episodes"})


def parse_scenario(entry: Any, index: int, track: Track, context: Any) -> EvalScenario:
    """The ``index``-th table; ``context`` is what ``track.read_tables`` read from the file's top level."""
    if not isinstance(entry, dict):
        raise EvalSetError(f"scenario #{index}: expected a table, got {entry!r}")
    name = entry.get("name")
    check_name(name, f"scenario #{index}: name")
    assert isinstance(name, str)
    where = f"scenario {name!r}"
    no_unknown(entry, SHARED_KEYS | track.scenario_keys, where)
    weight = number(entry.get("weight", 1.0), f"{where}: weight")
    own = {key: value for key, value in entry.items() if key in track.scenario_keys}
    scenario, source = track.parse_scenario(own, where, context)
    episodes = entry.get("episodes")
    if not isinstance(episodes, list) or not episodes:
        raise EvalSetError(f"{where}: 'episodes' must be a non-empty list of {{id, split, seed|key}} tables")
    parsed = tuple(_parse_episode(ep, i, where) for i, ep in enumerate(episodes))
    return EvalScenario(name, weight, scenario, parsed, source)


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
