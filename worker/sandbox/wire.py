"""What both ends of the sandbox's channel agree on besides framing: how a scenario travels (named by its track,
which writes and reads it), how replies are made, and the fingerprint of the simulator each end runs.

Imported on both sides (the trusted runner encodes, the harness and the episode process decode), so it depends on
``layersched.sim`` and the standard library only.
"""

from __future__ import annotations

import contextlib
import hashlib
import operator
from pathlib import Path
from typing import Any

from layersched.sim.tracks import Replica, get_track, load_track_module, track_module

_INT64 = 2**63
# The worker hands the harness its start nonce in this environment variable (not on the command line, which every
# process can read); the harness echoes it in its first frame and removes it before it forks anything.
NONCE_ENV = "LAYERSCHED_START_NONCE"
# The longest text of a bad return value the episode process sends (the trusted side cuts it again).
MAX_VALUE_CHARS = 200


def scenario_frame(name: str, track_id: str, scenario: Any, content_hash: str | None = None) -> dict[str, Any]:
    """The ``scenario`` frame: which track (its id and the module that defines it, which the harness imports) and
    the scenario as that track writes it, with the content hash the harness must compute from it again
    (``content_hash``, when the caller has it already: a lab scenario's hash serialises its catalog)."""
    track = get_track(track_id)
    return {
        "type": "scenario",
        "name": name,
        "track": track_id,
        "module": track_module(track_id),
        "hash": track.scenario_hash(scenario) if content_hash is None else content_hash,
        "scenario": track.scenario_to_wire(scenario),
    }


def replica_from_frame(frame: dict[str, Any]) -> tuple[Replica, str]:
    """The sandbox's replica of a ``scenario`` frame's scenario, and its content hash as this side computes it.

    The frame comes from the trusted side, so importing the module it names is importing trusted code, from the
    installed paths only (``isolation.trusted_import_path``). The harness imports the built-in tracks before it
    forks anything, and replaces a spare forked before another track's module was imported
    (``Harness._replace_spare``): no episode process imports a track module after its policy."""
    track = load_track_module(frame["module"])
    if track.id != frame["track"]:
        raise ValueError(f"module {frame['module']!r} defines track {track.id!r}, not {frame['track']!r}")
    scenario = track.scenario_from_wire(frame["scenario"])
    return track.replica(scenario), track.scenario_hash(scenario)


def action_message(step: int, value: object) -> dict[str, Any]:
    """The reply for what the policy returned: an ``action`` if it is an integer, else ``bad_action`` naming it."""
    if not isinstance(value, bool) and not isinstance(value, int):
        with contextlib.suppress(Exception):  # numpy integers and other exact integer types, as in-process
            value = operator.index(value)  # type: ignore[arg-type]
    if isinstance(value, int) and not isinstance(value, bool):
        if -_INT64 <= value < _INT64:
            return {"type": "action", "step": step, "action": value}
        return {
            "type": "bad_action",
            "step": step,
            "value": f"an integer of {value.bit_length()} bits",
            "value_type": "int",
        }
    try:
        text = repr(value)[:MAX_VALUE_CHARS]
    except Exception:
        text = "<unrepresentable>"
    return {"type": "bad_action", "step": step, "value": text, "value_type": type(value).__name__[:MAX_VALUE_CHARS]}


def sim_fingerprint() -> str:
    """SHA-256 over the simulator as installed here: its ``*.py`` and ``*.c`` files and data files (what the image
    build copies; the image runs observe()'s Python loop, the host may run the C kernel built from that ``*.c``).

    The harness reports it before any code of the participant runs, and it never runs any afterwards either: if it
    equals the worker's own, the two simulators are the same.
    """
    import layersched.sim

    root = Path(layersched.sim.__file__).parent
    # The top level and the tracks (the sandbox runs both); evaluation-set files are read on the trusted side only.
    tracks = root / "tracks"
    sources = [*root.glob("*.py"), *root.glob("*.c"), *tracks.rglob("*.py"), *tracks.rglob("*.c")]
    data = [*(root / "data").glob("*"), *tracks.glob("*/data/*")]  # a track's own data: the lab's catalogs
    files = sorted([*sources, *(p for p in data if p.is_file())])
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
