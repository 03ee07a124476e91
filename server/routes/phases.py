"""The challenge's phases as participants see them (organisers create, open and close them: ``routes/admin``)."""

from __future__ import annotations

from fastapi import APIRouter

from layersched.server import presenters, storage
from layersched.server.deps import SessionDep, SettingsDep
from layersched.server.models import utcnow
from layersched.server.schemas import PhasesPublic

router = APIRouter(prefix="/phases", tags=["phases"])


@router.get("", response_model=PhasesPublic)
def list_phases(session: SessionDep, settings: SettingsDep) -> PhasesPublic:
    """Every phase, in the order they open: its set, track, times, quota and whether its boards are public."""
    now = utcnow()
    rows = [
        presenters.phase_public(p, default_quota=settings.daily_quota, now=now)
        for p in storage.list_phases(session=session)
    ]
    return PhasesPublic(data=rows, count=len(rows))
