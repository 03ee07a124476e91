"""``python -m layersched.sim`` (also ``layersched sim``): a track's baseline table, the lab's by default.

``python -m layersched.sim --help`` lists the lab's options and examples (sim/tracks/layers_v1/table.py);
``--track ID --help`` another track's. Every track's table is its package's ``table.main``.

This module only dispatches on ``--track``, and imports the table it runs and nothing else: another track's table
never loads the lab's simulator (a sixth of the jobs-v1 table's process, issue 19's benchmark).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from layersched.sim.tracks import DEFAULT_TRACK_ID, TrackError, track_module


def split_track(argv: Sequence[str]) -> tuple[str, list[str]]:
    """The ``--track ID`` of ``argv`` (the lab's when absent) and the other arguments."""
    rest, track_id = list(argv), DEFAULT_TRACK_ID
    for i, arg in enumerate(rest):
        if arg == "--track" and i + 1 < len(rest):
            track_id = rest[i + 1]
            return track_id, rest[:i] + rest[i + 2 :]
        if arg.startswith("--track="):
            return arg.split("=", 1)[1], rest[:i] + rest[i + 1 :]
    return track_id, rest


def main(argv: Sequence[str] | None = None) -> int:
    track_id, rest = split_track(sys.argv[1:] if argv is None else argv)
    try:
        module = importlib.import_module(track_module(track_id) + ".table")
    except (TrackError, ImportError) as exc:
        print(f"error: track {track_id!r} has no baseline table: {exc}", file=sys.stderr)
        return 2
    code: int = module.main(rest)
    return code
