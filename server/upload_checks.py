"""The refusals an upload meets before its bundle is read: no such phase, none or several open, another track, closed
uploads, the quota.

One definition for the upload itself (``POST /submissions``) and for the pre-flight question ``GET /me/allowance``
that ``layersched submit`` asks before it even builds the bundle: both must refuse alike, in the same order.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.config import Settings
from layersched.server.errors import Conflict
from layersched.server.models import Phase, User


def check_upload_allowed(
    *, session: Session, user: User, settings: Settings, phase_name: str | None = None, track: str | None = None
) -> Phase:
    """The phase a new submission of ``user`` would be for (``phase_name``, default the only open one), its set
    the one it is scored on; raises the upload's refusal instead. ``track``, when the client says which problem its
    policy is for, must be the phase's."""
    phase = storage.resolve_phase(session=session, name=phase_name)
    if track is not None and track != phase.evalset.track:
        raise Conflict(
            f"phase {phase.name!r} runs the track {phase.evalset.track!r}, not {track!r}: submit to a phase of "
            f"{track!r} or build the policy for {phase.evalset.track!r}"
        )
    storage.check_submissions_open(session=session, user=user, phase=phase, deadline=settings.submission_deadline)
    storage.check_can_submit(
        session=session, user=user, phase=phase, daily_quota=settings.daily_quota, max_in_flight=settings.max_in_flight
    )
    return phase
