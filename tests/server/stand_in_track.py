"""A stand-in track for the server's and CLI's tests: an object with only the attributes of the ``Track`` protocol
that the server and the CLI read to describe a board (no simulator: nothing here runs an episode).

Its names are unlike the lab's on purpose, so a page or a line that still says the lab's reference shows up.
``register()`` makes it known to this process; a server started apart lists this module in
``LAYERSCHED_TRACK_MODULES``.
"""

from __future__ import annotations

from typing import Any

from layersched.sim.tracks import MetricSpec, load_track_module

TRACK_ID = "standin-v1"
REFERENCE = "FirstFit"
TITLE = "Stand-in bin packing"


class StandInTrack:
    id = TRACK_ID
    title = TITLE
    reference_baseline = REFERENCE
    baseline_names = (REFERENCE, "Shuffle")
    primary_metric = "makespan"
    metric_specs = (MetricSpec("makespan", "makespan", "s"),)
    starter = ("tests.server", "stand_in_starter")


TRACK = StandInTrack()


def register() -> Any:
    return load_track_module(__name__)
