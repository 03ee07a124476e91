"""Loading an evaluation-set file, and checking it against a published commitment."""

from __future__ import annotations

import hmac
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from layersched.sim.errors import EvalSetError
from layersched.sim.evalset.builtin import BUILTIN_SETS
from layersched.sim.evalset.model import FORMAT, FORMAT_VERSION, EvalSet, find_track
from layersched.sim.evalset.scenarios import parse_scenario
from layersched.sim.tracks.registry import DEFAULT_TRACK_ID
from layersched.sim.tracks.values import check_name, no_unknown

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 needs the tomli backport
    import tomli as tomllib

# The rest of the top level is the track's (Track.evalset_tables: the lab's [catalogs]).
_TOP_KEYS = frozenset({"format", "version", "name", "description", "scenario", "template", "track"})


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            data: dict[str, Any] = tomllib.load(fh)
            return data
    except OSError as exc:
        raise EvalSetError(f"cannot read evaluation set {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise EvalSetError(f"{path}: not valid TOML ({exc})") from exc


def sample_set_name(track_id: str) -> str | None:
    """The built-in set that is ``track_id``'s public sample (what its starter kit validates on), if there is one."""
    for name, path in BUILTIN_SETS.items():
        if read_toml(path).get("track", DEFAULT_TRACK_ID) == track_id:
            return name
    return None


def prefixed(path: Path, build: Callable[[], EvalSet]) -> EvalSet:
    try:
        return build()
    except EvalSetError as exc:
        raise EvalSetError(f"{path}: {exc}") from exc


def load_evalset(path: str | Path) -> EvalSet:
    """Read and validate an evaluation-set file; an ``EvalSetError`` names the file and the bad value."""
    path = Path(path)
    raw = read_toml(path)
    if raw.get("template") is True:
        raise EvalSetError(
            f"{path}: this is a template without keys; create a real set with "
            f"`layersched admin evalset new --from {path} --out hidden_seeds/private/NAME.toml`"
        )
    return prefixed(path, lambda: parse_evalset(raw, base_dir=path.parent))


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
    """Build an ``EvalSet`` from parsed TOML; paths in the file (catalog files) are resolved against ``base_dir``."""
    # Files written before tracks existed have no `track`: they are all the lab's problem. The track comes first
    # because it says which other top-level tables are allowed.
    track_id = raw.get("track", DEFAULT_TRACK_ID)
    track = find_track(track_id)
    no_unknown(raw, _TOP_KEYS | track.evalset_tables, "top level")
    if raw.get("format") != FORMAT:
        raise EvalSetError(f"format must be {FORMAT!r}, got {raw.get('format')!r}")
    if raw.get("version") != FORMAT_VERSION:
        raise EvalSetError(f"version must be {FORMAT_VERSION}, got {raw.get('version')!r}")
    if raw.get("template", False) is not False:
        raise EvalSetError(f"template must be true or absent, got {raw.get('template')!r}")
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise EvalSetError(f"description must be a string, got {description!r}")
    context = track.read_tables({k: raw[k] for k in sorted(track.evalset_tables) if k in raw}, base_dir=base_dir)
    raw_scenarios = raw.get("scenario")
    if not isinstance(raw_scenarios, list) or not raw_scenarios:
        raise EvalSetError("an evaluation set needs at least one [[scenario]] table")
    scenarios = [parse_scenario(entry, i, track, context) for i, entry in enumerate(raw_scenarios)]
    name = raw.get("name")
    check_name(name, "evaluation set name")
    assert isinstance(name, str)
    return EvalSet(name=name, scenarios=tuple(scenarios), description=description, track=track_id)
