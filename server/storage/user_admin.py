"""The organisers' view and care of accounts: the list of users with what an organiser needs to know of each, and
disabling (tokens revoked, uploads refused, rows off the boards) and enabling them again."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import ColumnElement, func, select, update
from sqlalchemy.orm import Session

from layersched.server.errors import Conflict, Forbidden
from layersched.server.models import ApiToken, Submission, Team, TeamMember, User
from layersched.server.storage.accounts import get_user_by_name
from layersched.server.storage.audit import add_log_entry


@dataclass(frozen=True)
class UserRow:
    id: int
    name: str
    email: str
    role: str
    team: str | None
    created_at: dt.datetime
    last_submission_at: dt.datetime | None
    tokens_active: int
    disabled_at: dt.datetime | None


def list_users(
    *,
    session: Session,
    name: str | None = None,
    role: str | None = None,
    team: str | None = None,
    disabled: bool | None = None,
    offset: int = 0,
    limit: int = 1000,
) -> tuple[list[UserRow], int]:
    """Users in creation order with their team now, their last submission and their active tokens, and the total
    that the filters match. One query for the page (correlated aggregates by indexed columns)."""
    where: list[ColumnElement[bool]] = []
    if name is not None:
        where.append(User.name == name)
    if role is not None:
        where.append(User.role == role)
    if team is not None:
        where.append(Team.name == team)
    if disabled is not None:
        where.append(User.disabled_at.is_not(None) if disabled else User.disabled_at.is_(None))
    last = select(func.max(Submission.created_at)).where(Submission.owner_id == User.id).scalar_subquery()
    tokens = (
        select(func.count(ApiToken.id))
        .where(ApiToken.user_id == User.id, ApiToken.revoked_at.is_(None))
        .scalar_subquery()
    )
    base = (
        select(User.id)
        .outerjoin(TeamMember, (TeamMember.user_id == User.id) & TeamMember.left_at.is_(None))
        .outerjoin(Team, Team.id == TeamMember.team_id)
        .where(*where)
    )
    total = session.scalar(select(func.count()).select_from(base.subquery())) or 0
    query = (
        base.with_only_columns(
            User.id,
            User.name,
            User.email,
            User.role,
            Team.name,
            User.created_at,
            last,
            tokens,
            User.disabled_at,
        )
        .order_by(User.id)
        .offset(offset)
        .limit(limit)
    )
    return [UserRow(*row) for row in session.execute(query)], total


def disable_user(*, session: Session, name: str, reason: str, actor: User, now: dt.datetime) -> tuple[User, int]:
    """Disable the user: every active token revoked (their page sessions end with them), uploads refused, their
    submissions off the boards until :func:`enable_user`. Returns the user and how many tokens were revoked."""
    user = get_user_by_name(session=session, name=name)
    if user.id == actor.id:
        raise Forbidden(f"{actor.name} cannot disable their own account (another organiser can)")
    if user.disabled_at is not None:
        since = user.disabled_at.astimezone(dt.timezone.utc).isoformat()
        raise Conflict(f"user {user.name!r} is disabled already (since {since})")
    revoked = session.scalars(
        update(ApiToken)
        .where(ApiToken.user_id == user.id, ApiToken.revoked_at.is_(None))
        .values(revoked_at=now)
        .returning(ApiToken.id)
    ).all()
    user.disabled_at = now
    add_log_entry(
        session,
        actor,
        "disable_user",
        f"user:{user.id}",
        {"name": user.name, "reason": reason, "tokens": sorted(revoked)},
    )
    session.commit()
    return user, len(revoked)


def enable_user(*, session: Session, name: str, actor: User) -> User:
    """Enable a disabled user again: their submissions are back on the boards. The tokens revoked when they were
    disabled stay revoked (one may be why they were): they sign in with a new token or link."""
    user = get_user_by_name(session=session, name=name)
    if user.disabled_at is None:
        raise Conflict(f"user {user.name!r} is not disabled")
    user.disabled_at = None
    add_log_entry(session, actor, "enable_user", f"user:{user.id}", {"name": user.name})
    session.commit()
    return user
