"""The refusals an upload meets before its bundle is read: closed uploads, the quota, no evaluation set.

One definition for the upload itself (``POST /submissions``) and for the pre-flight question ``GET /me/allowance``
that ``layersched submit`` asks before it even builds the bundle: both must refuse alike, in the same order.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.config import Settings
from layersched.server.errors import Conflict
from layersched.server.models import EvalSet, User


def check_upload_allowed(*, session: Session, user: User, settings: Settings) -> EvalSet:
    """The evaluation set a new submission of ``user`` would be scored on; raises the upload's refusal instead."""
    storage.check_submissions_open(session=session, user=user, deadline=settings.submission_deadline)
    storage.check_can_submit(
        session=session, user=user, daily_quota=settings.daily_quota, max_in_flight=settings.max_in_flight
    )
    evalset = storage.get_current_evalset(session=session)
    if evalset is None:
        raise Conflict("no evaluation set is registered yet; submissions open once an organiser registers one")
    return evalset
