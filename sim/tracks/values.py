"""Reading an evaluation-set file's values: each check raises an ``EvalSetError`` naming the value.

The shared parser (``layersched.sim.evalset``) and each track's scenario schema read their values with these, so
every file's errors read alike. They live here, below the tracks, so that a track does not import the evaluation-set
package (which the sandbox never needs).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from layersched.sim.errors import EvalSetError
from layersched.sim.keyed_random import MIN_KEY_BYTES

GENERATE = "generate"
# Names end up in URLs, database rows and file names.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_HEX = re.compile(r"[0-9a-f]*")


def no_unknown(table: Mapping[str, Any], allowed: AbstractSet[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise EvalSetError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")


def check_name(value: object, what: str) -> None:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise EvalSetError(
            f"{what} must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit, got {value!r}"
        )


def parse_source(table: Mapping[str, Any], where: str) -> tuple[bytes | None, int | None]:
    """Exactly one of ``key`` (hex) and ``seed`` (a non-negative int)."""
    has_key, has_seed = "key" in table, "seed" in table
    if has_key == has_seed:
        raise EvalSetError(f"{where}: give exactly one of 'key' (hidden) and 'seed' (public)")
    if has_seed:
        return None, integer(table["seed"], f"{where}: seed", minimum=0)
    return parse_key(table["key"], where), None


def source_json(seed: int | None, key: bytes | None, *, public: bool) -> dict[str, Any]:
    """What ``parse_source`` read, as the canonical form holds it: the seed, or the key (``public``: only that a key
    hides it)."""
    if seed is not None:
        return {"seed": seed}
    if public:
        return {"hidden": True}
    assert key is not None
    return {"key": key.hex()}


def parse_key(value: Any, where: str) -> bytes:
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


def integer(value: Any, where: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise EvalSetError(f"{where} must be an integer >= {minimum}, got {value!r}")
    return value


def number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise EvalSetError(f"{where} must be a finite number, got {value!r}")
    return float(value)


def pair(value: Any, where: str) -> tuple[float, float]:
    if not isinstance(value, list) or len(value) != 2:
        raise EvalSetError(f"{where} must be a pair [lo, hi], got {value!r}")
    return number(value[0], where), number(value[1], where)
