"""The evaluation sets shipped in the package, by name: each track's public sample."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

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
