"""The evaluation sets shipped in the package, by name: each track's public sample."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import tomllib

from layersched.sim.tracks import DEFAULT_TRACK_ID

_DATA = Path(__file__).resolve().parents[1] / "data"
# The public sample set, shipped in the package (hidden_seeds/sample.toml links to it): the server's public board
# scores on it by default and ``layersched validate`` scores on it, so their episodes and numbers are the same.
SAMPLE_PATH = _DATA / "sample.toml"
# One public sample per track (the lab's first: ``validate`` scores on it when no set is named).
BUILTIN_SETS: Mapping[str, Path] = {
    "sample": SAMPLE_PATH,
    "jobs-sample": _DATA / "jobs_sample.toml",
    "workflows-sample": _DATA / "workflows_sample.toml",
}


def sample_set_name(track_id: str) -> str | None:
    """The built-in set that is ``track_id``'s public sample (what its starter kit validates on), if there is one."""
    for name, path in BUILTIN_SETS.items():
        with path.open("rb") as handle:
            if tomllib.load(handle).get("track", DEFAULT_TRACK_ID) == track_id:
                return name
    return None
