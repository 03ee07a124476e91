"""The one serialisation that hashes and commitments are computed over (scenarios, evaluation sets, catalogs).

Its own module, so that a track's scenario can be hashed without importing the lab's catalog."""

from __future__ import annotations

import json
from typing import Any


def canonical_json(value: Any) -> bytes:
    """``value`` as sorted, compact, ASCII JSON."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()
