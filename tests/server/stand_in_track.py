"""A stand-in track for the server's and SDK's tests: an object with only the attributes of the ``Track`` protocol
that the server and the CLI read to describe a board, and a contract check (no simulator: nothing here runs an
episode).

Its names are unlike the lab's on purpose, so a page or a line that still says the lab's reference shows up.
``register()`` makes it known to this process; a server started apart lists this module in
``LAYERSCHED_TRACK_MODULES``.
"""

from __future__ import annotations

import random
from typing import Any

from layersched.sim.errors import PolicyError
from layersched.sim.tracks import MetricSpec, Policy, load_track_module

TRACK_ID = "standin-v1"
REFERENCE = "FirstFit"
TITLE = "Stand-in bin packing"
# A policy that keeps its contract (the lab's three-argument policies are refused on this track's sets).
POLICY = b"def policy(bins, rng):\n    return 0\n"


class StandInTrack:
    id = TRACK_ID
    title = TITLE
    reference_baseline = REFERENCE
    baseline_names = (REFERENCE, "Shuffle")
    primary_metric = "makespan"
    metric_specs = (MetricSpec("makespan", "makespan", "s"),)
    starter = ("tests.server", "stand_in_starter")
    # Two arguments, unlike the lab's three: the upload's and validate's signature checks must read them from here.
    policy_arguments = "(bins, rng)"

    def check_policy(self, policy: Policy, scenario: Any) -> None:
        """Its contract: policy(bins, rng) -> 0, asked twice; ``scenario`` is the bins' count."""
        for step in range(2):
            reply = policy(list(range(scenario + step)), random.Random(step))
            if reply != 0:
                raise PolicyError(
                    f"step {step}: policy returned {reply!r}; the stand-in wants 0", step=step, value=reply
                )


TRACK = StandInTrack()


def register() -> Any:
    return load_track_module(__name__)
