"""``/admin/quota/grants``: extra submissions an organiser grants a participant or a team in a phase on a day."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from layersched.server import storage
from layersched.server.deps import Organiser, SessionDep
from layersched.server.models import QuotaGrant, utcnow
from layersched.server.organiser_schemas import QuotaGrantCreate, QuotaGrantPublic, QuotaGrantsPublic
from layersched.server.schemas import NO_NUL
from layersched.server.storage.quota_grants import grant_quota, list_grants

router = APIRouter(prefix="/admin/quota", tags=["organisers"])


def _public(grant: QuotaGrant, phase: str, to: str) -> QuotaGrantPublic:
    return QuotaGrantPublic(
        id=grant.id,
        phase=phase,
        to=to,
        kind="team" if grant.team_id is not None else "user",
        extra=grant.extra,
        day=grant.day.date(),
        reason=grant.reason,
        created_at=grant.created_at,
    )


@router.post("/grants", status_code=201, response_model=QuotaGrantPublic)
def create_grant(session: SessionDep, actor: Organiser, body: QuotaGrantCreate) -> QuotaGrantPublic:
    """Grant extra submissions (in the audit log: ``grant_quota``). A member's grant counts for their team."""
    phase = storage.get_phase(session=session, name=body.phase)
    user = storage.get_user_by_name(session=session, name=body.user) if body.user is not None else None
    team = storage.get_team(session=session, name=body.team) if body.team is not None else None
    day = body.day or utcnow().date()
    grant = grant_quota(
        session=session, phase=phase, user=user, team=team, extra=body.extra, day=day, reason=body.reason, actor=actor
    )
    return _public(grant, phase.name, team.name if team is not None else user.name if user is not None else "")


@router.get("/grants", response_model=QuotaGrantsPublic)
def read_grants(
    session: SessionDep,
    _actor: Organiser,
    phase: Annotated[str | None, Query(min_length=1, max_length=50, pattern=NO_NUL)] = None,
) -> QuotaGrantsPublic:
    target = storage.get_phase(session=session, name=phase) if phase is not None else None
    rows = [_public(grant, name, to) for grant, name, to in list_grants(session=session, phase=target)]
    return QuotaGrantsPublic(data=rows, count=len(rows))
