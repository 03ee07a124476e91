"""``challenge.toml``: a whole challenge in one file (``docs/CHALLENGE.md``), read into the body of the API's
``PUT /admin/challenge`` and written back from its ``GET``.

Every key is checked here first, so a typo (``quotas = 2``) or a time without its zone is one error naming the
file, the table and the value before anything reaches the server; the server checks the body again (and what only it
knows: which sets are registered, which phases have submissions).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from layersched.sdk.errors import ConfigError
from layersched.sdk.tomlfile import read_toml

FORMAT = "layersched-challenge"
VERSION = 1
_TOP = {"format", "version", "description", "submission_deadline", "final_submissions", "teams", "phase"}
_TEAMS = {"max_size": "team_max_size", "invite_hours": "team_invite_hours", "merge_deadline": "team_merge_deadline"}
# The file's phase keys and the API's names for them.
_PHASE = {
    "name": "name",
    "title": "title",
    "evalset": "evalset",
    "opens": "opens_at",
    "closes": "closes_at",
    "quota": "daily_quota",
    "board": "visibility",
}
_REQUIRED_PHASE = ("name", "evalset")


def read_challenge(path: Path) -> dict[str, Any]:
    """The API body (``{"rules": {...}, "phases": [...]}``) of the challenge file at ``path``; ``ConfigError``
    naming the file and the key or value at fault."""
    raw = read_toml(path, "challenge file")

    def fail(message: str) -> ConfigError:
        return ConfigError(f"{path}: {message}")

    _no_unknown(raw, _TOP, "the top level", fail)
    if raw.get("format") != FORMAT or raw.get("version") != VERSION:
        raise fail(
            f'format = "{FORMAT}" and version = {VERSION} are required, got format = {raw.get("format")!r}, '
            f"version = {raw.get('version')!r}"
        )
    rules: dict[str, Any] = {
        "submission_deadline": _moment(raw.get("submission_deadline"), "submission_deadline", fail),
        "final_submissions": _count(raw.get("final_submissions"), "final_submissions", fail, least=1),
    }
    teams = raw.get("teams", {})
    if not isinstance(teams, dict):
        raise fail(f"[teams] must be a table, got {teams!r}")
    _no_unknown(teams, set(_TEAMS), "[teams]", fail)
    rules["team_max_size"] = _count(teams.get("max_size"), "[teams] max_size", fail, least=1)
    hours = teams.get("invite_hours")
    if hours is not None and (isinstance(hours, bool) or not isinstance(hours, (int, float)) or hours <= 0):
        raise fail(f"[teams] invite_hours must be a positive number of hours, got {hours!r}")
    rules["team_invite_hours"] = float(hours) if hours is not None else None
    rules["team_merge_deadline"] = _moment(teams.get("merge_deadline"), "[teams] merge_deadline", fail)
    phases = raw.get("phase", [])
    if not isinstance(phases, list):
        raise fail("phases are [[phase]] tables")
    body: dict[str, Any] = {"rules": rules, "phases": [_phase(p, i, fail) for i, p in enumerate(phases, 1)]}
    names = [p["name"] for p in body["phases"]]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise fail(f"phase {repeated[0]!r} is named twice; phase names are unique")
    return body


def _phase(raw: Any, index: int, fail: Any) -> dict[str, Any]:
    where = f"[[phase]] {index}"
    if not isinstance(raw, dict):
        raise fail(f"{where} must be a table")
    if isinstance(raw.get("name"), str):
        where = f"phase {raw['name']!r}"
    _no_unknown(raw, set(_PHASE), where, fail)
    for key in _REQUIRED_PHASE:
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise fail(f"{where}: {key} is required, a string, got {raw.get(key)!r}")
    title = raw.get("title", "")
    if not isinstance(title, str):
        raise fail(f"{where}: title must be a string, got {title!r}")
    board = raw.get("board", "public")
    if board not in ("public", "organisers"):
        raise fail(f'{where}: board must be "public" or "organisers", got {board!r}')
    return {
        "name": raw["name"],
        "title": title,
        "evalset": raw["evalset"],
        "opens_at": _moment(raw.get("opens"), f"{where}: opens", fail),
        "closes_at": _moment(raw.get("closes"), f"{where}: closes", fail),
        "daily_quota": _count(raw.get("quota"), f"{where}: quota", fail, least=0),
        "visibility": board,
    }


def _no_unknown(table: dict[str, Any], known: set[str], where: str, fail: Any) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        raise fail(f"unknown key {unknown[0]!r} in {where} (known: {', '.join(sorted(known))})")


def _moment(value: Any, key: str, fail: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, dt.datetime) or value.tzinfo is None:
        raise fail(f"{key} must be a time with its zone, such as 2027-03-01T12:00:00Z, got {value!r}")
    return value.isoformat()


def _count(value: Any, key: str, fail: Any, *, least: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise fail(f"{key} must be an integer of at least {least}, got {value!r}")
    return value


def write_challenge(body: dict[str, Any], *, source: str) -> str:
    """The challenge file of an API body (``GET /admin/challenge``), ``source`` named in its first comment."""
    rules, phases = body.get("rules", {}), body.get("phases", [])
    lines = [
        f"# The challenge of {source}, written by `layersched admin challenge export`; format: docs/CHALLENGE.md.",
        "# Apply it with `layersched admin challenge apply FILE` (--dry-run first shows what would change).",
        f'format = "{FORMAT}"',
        f"version = {VERSION}",
    ]
    for key in ("submission_deadline", "final_submissions"):
        if rules.get(key) is not None:
            lines.append(f"{key} = {_value(rules[key], time=key == 'submission_deadline')}")
    teams = [(short, rules.get(long)) for short, long in _TEAMS.items() if rules.get(long) is not None]
    if teams:
        lines += ["", "[teams]", *(f"{k} = {_value(v, time=k == 'merge_deadline')}" for k, v in teams)]
    for phase in phases:
        lines += ["", "[[phase]]"]
        for key, field in _PHASE.items():
            value = phase.get(field)
            if value is not None and (key != "title" or value):
                lines.append(f"{key} = {_value(value, time=key in ('opens', 'closes'))}")
    return "\n".join(lines) + "\n"


def _value(value: Any, *, time: bool = False) -> str:
    """A TOML value: a time (an API time string) bare, in UTC; a string in JSON's quoting, which TOML reads."""
    if time:
        moment = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(dt.timezone.utc)
        return moment.isoformat().replace("+00:00", "Z")
    return json.dumps(value)
