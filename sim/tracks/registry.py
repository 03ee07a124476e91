"""The tracks this installation knows, by versioned id.

Built-in tracks are the packages ``layersched.sim.tracks.<name>_v<N>``: the folder ``sim/tracks/jobs_v1/`` is track
``jobs-v1`` (underscores in the name become hyphens), found by its folder and imported on first use, so adding a
built-in track is adding its folder. Others (a test's toy problem, an organiser's own) are modules that define
``TRACK``; ``load_track_module`` imports one and registers it.
Both ends of a sandbox name a track by its id and the module that defines it, so the harness imports the same.

An id is ``name-vN``, as Gymnasium names environments: a change in a track's dynamics, scoring or contract is a
new version, never an edit of the old one.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from layersched.sim.errors import SimError
from layersched.sim.tracks.interface import Track

DEFAULT_TRACK_ID = "layers-v1"
_ID = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*-v[1-9][0-9]*")
_FOLDER = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*_v[1-9][0-9]*")  # a track id with "_" for "-": a package name


def builtin_modules(folder: Path, package: str) -> dict[str, str]:
    """Track id -> module, for each track package in ``folder`` (the package ``package``): a sub-folder named like
    ``jobs_v1`` with an ``__init__.py``."""
    return {
        path.name.replace("_", "-"): f"{package}.{path.name}"
        for path in sorted(folder.iterdir())
        if _FOLDER.fullmatch(path.name) and (path / "__init__.py").is_file()
    }


# The built-in tracks: id -> the module that defines TRACK.
BUILTIN_MODULES: dict[str, str] = builtin_modules(Path(__file__).parent, __name__.rpartition(".")[0])

_registered: dict[str, tuple[Track, str]] = {}


class TrackError(SimError):
    """An unknown track id, or a module that does not define a track."""


def check_track_id(track_id: object) -> str:
    if not isinstance(track_id, str) or not _ID.fullmatch(track_id):
        raise TrackError(f"track id must look like 'name-v1' (lowercase, a version suffix), got {track_id!r:.80}")
    return track_id


def load_track_module(module_name: str) -> Track:
    """Import ``module_name``, register the ``TRACK`` it defines and return it."""
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise TrackError(f"track module {module_name!r} cannot be imported: {exc}") from exc
    track: Track | None = getattr(module, "TRACK", None)
    if track is None:
        raise TrackError(f"track module {module_name!r} defines no TRACK")
    track_id = check_track_id(getattr(track, "id", None))
    known = _registered.get(track_id)
    if known is not None and known[0] is not track:
        raise TrackError(f"track {track_id!r} is defined twice: by {known[1]!r} and by {module_name!r}")
    _registered[track_id] = (track, module_name)
    return track


def get_track(track_id: str) -> Track:
    """The track ``track_id``; ``TrackError`` lists the known ones."""
    known = _registered.get(track_id)
    if known is not None:
        return known[0]
    module = BUILTIN_MODULES.get(track_id)
    if module is None:
        raise TrackError(f"unknown track {track_id!r}; known tracks: {', '.join(track_ids())}")
    track = load_track_module(module)
    if track.id != track_id:
        raise TrackError(f"track module {module!r} defines track {track.id!r}; its folder makes it {track_id!r}")
    return track


def track_module(track_id: str) -> str:
    """The module that defines ``track_id`` (what the sandbox's harness imports)."""
    get_track(track_id)
    return _registered[track_id][1]


def track_ids() -> list[str]:
    """Every id this process can run: the built-in ones and those registered."""
    return sorted(set(BUILTIN_MODULES) | set(_registered))
