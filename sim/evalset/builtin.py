"""The evaluation sets shipped in the package, by name."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

# The public sample set, shipped in the package (hidden_seeds/sample.toml links to it): the server's public board
# scores on it by default and ``layersched validate`` scores on it, so their episodes and numbers are the same.
SAMPLE_PATH = Path(__file__).resolve().parents[1] / "data" / "sample.toml"
BUILTIN_SETS: Mapping[str, Path] = {"sample": SAMPLE_PATH}
