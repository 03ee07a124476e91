"""Extra submissions an organiser grants a participant or a team in a phase, on one UTC day (``admin quota grant``):
for a submission the service lost a day to, a make-up after an outage, an accommodation. That day the competitor's
quota in the phase is the phase's plus every grant to the team or to one of its members (a member's grant counts
for the team, as their submissions do); each grant is in the audit log."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection

from sqlalchemy import ColumnElement, func, or_, select
from sqlalchemy.orm import Session

from layersched.server.errors import Conflict
from layersched.server.models import Phase, QuotaGrant, Team, User
from layersched.server.storage.audit import add_log_entry
from layersched.server.storage.members import member_ids, team_of
from layersched.server.storage.quota import day_start, phase_quota


def grant_quota(
    *,
    session: Session,
    phase: Phase,
    user: User | None,
    team: Team | None,
    extra: int,
    day: dt.date,
    reason: str,
    actor: User,
) -> QuotaGrant:
    """Grant ``extra`` submissions in ``phase`` on ``day`` to ``user`` or ``team`` (exactly one)."""
    if (user is None) == (team is None):
        raise ValueError("a grant goes to a user or a team, exactly one of them")
    if extra < 1:
        raise ValueError(f"a grant is of at least 1 submission, got {extra}")
    if user is not None and user.role != "participant":
        raise Conflict(f"{user.name} is an organiser: organisers have no quota to grant to")
    start = dt.datetime.combine(day, dt.time(), tzinfo=dt.timezone.utc)
    grant = QuotaGrant(
        phase_id=phase.id,
        user_id=user.id if user else None,
        team_id=team.id if team else None,
        day=start,
        extra=extra,
        reason=reason,
        created_by_id=actor.id,
    )
    session.add(grant)
    session.flush()
    target = f"team:{team.name}" if team is not None else f"user:{user.id if user else ''}"
    detail = {"phase": phase.name, "extra": extra, "day": day.isoformat(), "reason": reason}
    if user is not None:
        detail["user"] = user.name
    add_log_entry(session, actor, "grant_quota", target, detail)
    session.commit()
    return grant


def granted(
    *, session: Session, owner_ids: Collection[int], team_id: int | None, phase: Phase, now: dt.datetime
) -> int:
    """The extra submissions granted for ``now``'s UTC day in ``phase`` to these users or to their team."""
    targets: list[ColumnElement[bool]] = [QuotaGrant.user_id.in_(list(owner_ids))]
    if team_id is not None:
        targets.append(QuotaGrant.team_id == team_id)
    total = session.scalar(
        select(func.sum(QuotaGrant.extra)).where(
            QuotaGrant.phase_id == phase.id, QuotaGrant.day == day_start(now), or_(*targets)
        )
    )
    return int(total or 0)


def competitor_quota(*, session: Session, user_id: int, phase: Phase, default: int, now: dt.datetime) -> int:
    """The user's competitor's quota in ``phase`` today: the phase's (``default`` when it has none) plus grants."""
    team = team_of(session=session, user_id=user_id)
    extra = granted(
        session=session,
        owner_ids=member_ids(session=session, user_id=user_id),
        team_id=team.id if team else None,
        phase=phase,
        now=now,
    )
    return phase_quota(phase, default) + extra


def list_grants(*, session: Session, phase: Phase | None) -> list[tuple[QuotaGrant, str, str]]:
    """Grants (of ``phase``, or all), newest first, with the phase's name and the name of whom they went to."""
    query = (
        select(QuotaGrant, Phase.name, func.coalesce(Team.name, User.name))
        .join(Phase, Phase.id == QuotaGrant.phase_id)
        .outerjoin(User, User.id == QuotaGrant.user_id)
        .outerjoin(Team, Team.id == QuotaGrant.team_id)
        .order_by(QuotaGrant.id.desc())
    )
    if phase is not None:
        query = query.where(QuotaGrant.phase_id == phase.id)
    return [(grant, phase_name, whom) for grant, phase_name, whom in session.execute(query)]
