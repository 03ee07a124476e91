"""Tracks: one scheduling problem each behind the interface of ``interface.Track``, found by id in ``registry``."""

from layersched.sim.tracks.interface import (
    EpisodeRun,
    MetricSpec,
    Policy,
    Replica,
    Track,
    TrustedEpisode,
    TrustedSimulator,
)
from layersched.sim.tracks.registry import (
    DEFAULT_TRACK_ID,
    TrackError,
    check_track_id,
    get_track,
    load_track_module,
    track_ids,
    track_module,
)

__all__ = [
    "DEFAULT_TRACK_ID",
    "EpisodeRun",
    "MetricSpec",
    "Policy",
    "Replica",
    "Track",
    "TrackError",
    "TrustedEpisode",
    "TrustedSimulator",
    "check_track_id",
    "get_track",
    "load_track_module",
    "track_ids",
    "track_module",
]
