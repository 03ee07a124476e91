"""The challenge's phases as participants see them (organisers create, open and close them: ``routes/admin``)."""

from __future__ import annotations

from fastapi import APIRouter

from layersched.server import presenters, storage
from layersched.server.deps import OptionalUser, SessionDep, SettingsDep
from layersched.server.models import utcnow
from layersched.server.schemas import PhasesPublic

router = APIRouter(prefix="/phases", tags=["phases"])


@router.get("", response_model=PhasesPublic)
def list_phases(session: SessionDep, settings: SettingsDep, user: OptionalUser) -> PhasesPublic:
    """Every phase, in the order they open: its set, track, times, state, quota and whether its boards are public;
    with a token, also what the caller (their team, in one) submitted to each today, against its quota."""
    now = utcnow()
    rows = [
        presenters.phase_public(
            p,
            default_quota=settings.daily_quota,
            now=now,
            submissions_today=None
            if user is None
            else storage.count_submissions_today(session=session, user_id=user.id, phase=p),
        )
        for p in storage.list_phases(session=session)
    ]
    return PhasesPublic(data=rows, count=len(rows))
