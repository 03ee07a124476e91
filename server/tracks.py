"""What the server shows of a track: the fields that describe the problem of a set or a board in the API and pages.

The server names no track: it reads the attributes of ``layersched.sim.tracks.get_track(id)`` for the id an
evaluation set was registered with. Tracks that are not built in (an organiser's own, a test's toy problem) are
modules that ``Settings.track_modules`` lists; ``load_tracks`` registers them when the app starts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from layersched.server.errors import TrackUnavailable
from layersched.sim.tracks import DEFAULT_TRACK_ID, Track, TrackError, get_track, load_track_module, track_ids


def load_tracks(modules: Iterable[str]) -> None:
    """Register the tracks these modules define (``TrackError`` names a module that cannot be imported)."""
    for module in modules:
        load_track_module(module)


def server_track(track_id: str) -> Track:
    """The track of a registered set; one this process does not know (its module was listed when the set was
    registered, not when this server started) is the service's misconfiguration, said as such."""
    try:
        return get_track(track_id)
    except TrackError:
        raise TrackUnavailable(
            f"the evaluation set's track {track_id!r} is not known to this server (known: {', '.join(track_ids())}); "
            "the organisers must name its module in LAYERSCHED_TRACK_MODULES and restart it"
        ) from None


def track_fields(track_id: str) -> dict[str, str]:
    """``track``, ``track_title`` and ``reference_baseline`` of ``track_id``, as the API's bodies carry them."""
    track = server_track(track_id)
    return {"track": track.id, "track_title": track.title, "reference_baseline": track.reference_baseline}


@dataclass(frozen=True)
class MetricColumn:
    """One of a track's metrics as a page's column: its key in the metrics records, its label and unit."""

    name: str
    label: str
    unit: str
    primary: bool


def metric_columns(track_id: str) -> list[MetricColumn]:
    """The track's metrics in its order (``Track.metric_specs``), the primary one marked."""
    track = server_track(track_id)
    return [MetricColumn(m.name, m.label, m.unit, m.name == track.primary_metric) for m in track.metric_specs]


def with_track(board: dict[str, Any]) -> dict[str, Any]:
    """A stored board (a frozen or published snapshot) with its track's fields, as they were when it was taken.
    Snapshots taken before sets named their track hold none: they were all of layers-v1, the only problem then."""
    if {"track", "track_title", "reference_baseline"} <= board.keys():
        return board  # described when taken: its track need not be registered in this process any more
    return {**track_fields(board.get("track", DEFAULT_TRACK_ID)), **board}
