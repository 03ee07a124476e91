"""A jobs-v1 policy: shortest job first, the reference every score is a ratio to (so this one scores 1.0).

``policy(env, rng)`` returns the slot of the visible job to place now, or None to let time move on one step. See
the contract (``layersched.sim.tracks.get_track("jobs-v1").contract``) for everything ``env`` holds.
"""

from __future__ import annotations

import random
from typing import Any


def policy(env: Any, rng: random.Random) -> int | None:
    best, action = 0.0, None
    for i, job in enumerate(env.slots):
        # Only a job that fits from the current step for its whole length; the lowest slot wins a tie.
        if job is not None and env.fits_now(i) and 1 / job.length > best:
            best, action = 1 / job.length, i
    return action
