from __future__ import annotations

from typing import Annotated, cast

from fastapi import APIRouter, Query
from pydantic import BaseModel

from layersched.server import storage
from layersched.server.deps import CurrentUser, SessionDep, SettingsDep
from layersched.server.errors import ServiceError
from layersched.server.models import Phase, utcnow
from layersched.server.schemas import NO_NUL, MePublic, Role
from layersched.server.storage.quota_grants import competitor_quota
from layersched.server.upload_checks import check_upload_allowed

router = APIRouter(tags=["participants"])


@router.get("/me", response_model=MePublic)
def read_me(session: SessionDep, user: CurrentUser, settings: SettingsDep) -> MePublic:
    return MePublic(
        id=user.id,
        name=user.name,
        email=user.email,
        role=cast(Role, user.role),  # CHECK constraint guarantees the value
        submissions_today=storage.count_submissions_today(session=session, user_id=user.id),
        daily_quota=settings.daily_quota,
        team=team.name if (team := storage.team_of(session=session, user_id=user.id)) is not None else None,
    )


# The allowance's schemas live with its one route: they belong to this read-only preflight and nothing else.
class Refusal(BaseModel):
    """The error an upload made now would get: its HTTP ``status``, ``code`` and ``message``, word for word."""

    status: int
    code: str
    message: str


class AllowancePublic(BaseModel):
    phase: str | None  # the phase an upload would be for (None: the refusal is that there is no such phase)
    track: str | None  # its track, which the CLI's own checks use
    submissions_today: int
    daily_quota: int
    in_flight: int
    max_in_flight: int
    refusal: Refusal | None


@router.get("/me/allowance", response_model=AllowancePublic)
def read_allowance(
    session: SessionDep,
    user: CurrentUser,
    settings: SettingsDep,
    phase: Annotated[str | None, Query(max_length=50, pattern=NO_NUL, description="default: the open phase")] = None,
) -> AllowancePublic:
    """Whether an upload (to ``phase``) would be accepted now, asked before the bundle is sent (``layersched submit``
    does), so a used-up quota, a closed phase or closed uploads are reported without the wait of an upload. Runs the
    upload's own checks, in its order; the upload checks again, so this answer is advice, not a reservation."""
    refusal = None
    target: Phase | None = None
    try:
        target = storage.resolve_phase(session=session, name=phase)
        check_upload_allowed(session=session, user=user, settings=settings, phase_name=target.name)
    except ServiceError as exc:
        refusal = Refusal(status=exc.status, code=exc.code, message=exc.message)
    return AllowancePublic(
        phase=target.name if target else None,
        track=target.evalset.track if target else None,
        submissions_today=storage.count_submissions_today(session=session, user_id=user.id, phase=target),
        daily_quota=(
            competitor_quota(session=session, user_id=user.id, phase=target, default=settings.daily_quota, now=utcnow())
            if target
            else settings.daily_quota
        ),
        in_flight=storage.count_in_flight(session=session, user_id=user.id),
        max_in_flight=settings.max_in_flight,
        refusal=refusal,
    )
