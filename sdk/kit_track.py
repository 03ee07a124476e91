"""The track a starter kit is for: ``layersched-kit.toml``, written by ``layersched init --track`` into the kit.

``validate`` scores a kit on its track's public sample and ``submit`` sends it to the open phase of its track, so a
kit of jobs-v1 is never checked against the lab's ``policy(env, task, rng)`` or sent to the lab's phase. A policy
without the file (a single ``.py`` anywhere) keeps the defaults: the lab's sample, the only open phase. The file is
the kit's, not the policy's: bundles leave it out (``bundle.META_FILES``).

Format (TOML)::

    # the track this kit is for (layersched init --track): validate and submit use it
    track = "jobs-v1"
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from layersched.sdk.errors import ConfigError
from layersched.sdk.tomlfile import read_toml
from layersched.sim.tracks import Track, TrackError, get_track

KIT_FILE = "layersched-kit.toml"
_KEYS = frozenset({"track"})


@dataclass(frozen=True)
class KitTrack:
    """A kit's track and the file that names it (for messages)."""

    track: Track
    file: Path


def kit_text(track: Track) -> str:
    """What ``layersched init --track`` writes into the kit."""
    return (
        f"# The track this kit is for, written by `layersched init --track {track.id}`: `layersched validate` scores\n"
        f"# the policy on the track's public sample and `layersched submit` sends it to the track's open phase.\n"
        f'track = "{track.id}"\n'
    )


def find_kit_track(path: Path) -> KitTrack | None:
    """The track of the kit that ``path`` (a bundle: a directory, or a ``.py`` file in one) belongs to; None when
    there is no kit file. A kit file that cannot be read, has keys besides ``track`` or names a track this
    installation does not know raises ``ConfigError`` naming the file and the value."""
    folder = path if path.is_dir() else path.parent
    file = folder / KIT_FILE
    if not file.is_file():
        return None
    raw = read_toml(file, "kit file")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise ConfigError(f'{file}: unknown key {unknown[0]!r}; the kit file holds only track = "TRACK-ID"')
    track_id = raw.get("track")
    if not isinstance(track_id, str):
        raise ConfigError(f'{file}: track must be a track id such as track = "jobs-v1", got {track_id!r}')
    try:
        track = get_track(track_id)
    except TrackError as exc:
        raise ConfigError(f"{file}: {exc} (a track defined elsewhere is named in LAYERSCHED_TRACK_MODULES)") from None
    return KitTrack(track, file)
