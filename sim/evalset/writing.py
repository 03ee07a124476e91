"""Writing sets: ``dump_evalset`` and ``new_evalset``, which fills a template with fresh secret keys."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from layersched.sim.errors import EvalSetError
from layersched.sim.evalset.model import FORMAT, FORMAT_VERSION, SPLITS, EvalSet, episode_json, find_track
from layersched.sim.evalset.parse import load_evalset, parse_evalset, prefixed, read_toml
from layersched.sim.tracks.registry import DEFAULT_TRACK_ID
from layersched.sim.tracks.values import GENERATE, integer

KEY_BYTES = 32  # fresh keys are 256 bits; files may hold any key of at least MIN_KEY_BYTES
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def dump_evalset(evalset: EvalSet, *, relocate: Callable[[str], str] | None = None) -> str:
    """The set as a TOML document that ``load_evalset`` reads back to the same commitment.

    ``relocate`` maps a path as the set names it (a catalog file, relative to the set's folder) to the one to write,
    relative to where the document will be saved; by default paths are written as they are.
    """
    track = find_track(evalset.track)
    tables = track.dump_tables(evalset.scenarios, relocate=relocate or (lambda path: path))
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
    if evalset.track != DEFAULT_TRACK_ID:  # as in the canonical form: absent means the default track
        lines.append(f"track = {_toml(evalset.track)}")
    for table, entries in tables.items():
        for name, values in entries.items():
            lines += ["", f"[{_key(table)}.{_key(name)}]"]
            lines += [f"{_key(k)} = {_toml(v)}" for k, v in values.items()]
    for sc in evalset.scenarios:
        lines += ["", "[[scenario]]", f"name = {_toml(sc.name)}", f"weight = {_toml(float(sc.weight))}"]
        lines += [f"{_key(k)} = {_toml(v)}" for k, v in track.dump_scenario(sc).items()]
        lines.append("episodes = [")
        lines += [f"    {_toml(episode_json(ep, public=False))}," for ep in sc.episodes]
        lines.append("]")
    return "\n".join(lines) + "\n"


def _key(name: str) -> str:
    # A bare key only where TOML reads it as one key: a catalog named "hub.v2" must not become two nested tables.
    return name if _BARE_KEY.fullmatch(name) else _toml(name)


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
        return "{ " + ", ".join(f"{_key(k)} = {_toml(v)}" for k, v in value.items()) + " }"
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
    raw = read_toml(template_path)
    if raw.get("template") is not True:
        raise EvalSetError(f"{template_path}: not a template (a template has `template = true`)")
    try:
        real = _fill_template(raw)
    except EvalSetError as exc:
        raise EvalSetError(f"{template_path}: {exc}") from exc
    if name is not None:
        real["name"] = name
    evalset = prefixed(template_path, lambda: parse_evalset(real, base_dir=template_path.parent))
    if out_path.exists():
        raise EvalSetError(f"{out_path} already exists; refusing to overwrite an evaluation set")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    if not allow_tracked and _git_tracks(out_path):
        raise EvalSetError(
            f"{out_path} is not ignored by git; write real sets under hidden_seeds/private/ (or add the path "
            "to .gitignore) so their keys are never committed"
        )
    # Files the set names (catalogs) stay where they are: the new file refers to them relative to its own folder.
    text = dump_evalset(evalset, relocate=lambda path: os.path.relpath(template_path.parent / path, out_path.parent))
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
    track = find_track(raw.get("track", DEFAULT_TRACK_ID))
    for table in track.evalset_tables & set(raw):
        real[table] = _fresh_keys(raw[table])
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
            count = integer(generate.get(split, 0), f"{where}: generate.{split}", minimum=0)
            prefix = "pub" if split == "public" else "prv"
            episodes += [
                {"id": f"{prefix}{k:03d}", "split": split, "key": secrets.token_bytes(KEY_BYTES).hex()}
                for k in range(count)
            ]
        entry["episodes"] = episodes
        scenarios.append(entry)
    real["scenario"] = scenarios
    return real


def _fresh_keys(value: Any) -> Any:
    """``value`` with every ``key = "generate"`` of its tables replaced by a fresh key (the track's tables: the
    lab's hidden catalogs)."""
    if not isinstance(value, dict):
        return value
    return {
        k: secrets.token_bytes(KEY_BYTES).hex() if k == "key" and v == GENERATE else _fresh_keys(v)
        for k, v in value.items()
    }


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
