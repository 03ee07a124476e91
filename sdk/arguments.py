"""Argument types of the CLI that the student and organiser commands share: a phase's name, a moment in time.

Each raises ``argparse.ArgumentTypeError`` naming the value, so a bad argument exits 2 with argparse's message.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re

_PHASE = re.compile(r"[a-z0-9][a-z0-9_-]{0,49}")


def phase_name(value: str) -> str:
    """A phase's name as the server knows them: a slug (``dev``, ``final``, ``round-2``)."""
    if not _PHASE.fullmatch(value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a phase name: 1-50 lower-case letters, digits, - and _ (see layersched phases)"
        )
    return value


def moment(value: str) -> str:
    """An ISO 8601 time (``2027-03-01T12:00Z``, ``2027-03-01 12:00+01:00``); one without an offset is UTC. Returned
    as ISO 8601 with its offset, as the API takes it."""
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a time: give ISO 8601, e.g. 2027-03-01T12:00Z or 2027-03-01T12:00+01:00"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.timezone.utc)
    return parsed.isoformat()
