"""Who reads a submission's results, and what a participant may read of a hidden (keyed) episode.

Organisers read everything. The participant who owns a submission, and every member of their team now, reads its
errors and logs, except what a policy may have written about a hidden episode (its traceback, the value it returned,
what it printed): of those only the status and the step. Anyone else reads no error at all. The worker writes the
participant's version of an evaluation's error with the same words (``hidden_episode_message``).
"""

from __future__ import annotations

from typing import Literal

from layersched.server.models import Submission, User
from layersched.server.storage.members import same_competitor

Audience = Literal["organiser", "owner", "public"]


def audience(viewer: User | None, submission: Submission) -> Audience:
    if viewer is not None and viewer.role == "organiser":
        return "organiser"
    return "owner" if viewer is not None and same_competitor(viewer, submission.owner) else "public"


def hidden_episode_message(status: str, step: int | None) -> str:
    """All a participant reads of how a hidden episode ended."""
    where = "" if step is None else f" at step {step}"
    return f"{status}{where} (hidden episode: its details are shown to organisers only)"
