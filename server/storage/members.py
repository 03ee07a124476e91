"""Who competes with whom: a user's team members now (the user alone outside a team), and the row locks that make a
competitor's checks and changes happen one after the other.

Reads only; teams are made and changed by ``storage.teams``. Quotas, visibility and boards count a competitor's
submissions through :func:`member_ids`, so a team's members share them and a member who joins brings theirs along
(Kaggle: a merged team's past submissions count against its quota).
"""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from layersched.server.models import EvalSet, Team, TeamMember, User


def team_of(*, session: Session, user_id: int) -> Team | None:
    """The user's team now, or None."""
    return session.scalar(
        select(Team)
        .join(TeamMember, TeamMember.team_id == Team.id)
        .where(TeamMember.user_id == user_id, TeamMember.left_at.is_(None))
    )


def member_ids(*, session: Session, user_id: int) -> list[int]:
    """The ids of everyone the user competes with, the user included, in id order ([user_id] outside a team)."""
    mine = select(TeamMember.team_id).where(TeamMember.user_id == user_id, TeamMember.left_at.is_(None))
    ids = list(
        session.scalars(
            select(TeamMember.user_id)
            .where(TeamMember.team_id.in_(mine.scalar_subquery()), TeamMember.left_at.is_(None))
            .order_by(TeamMember.user_id)
        )
    )
    return ids or [user_id]


def same_competitor(a: User, b: User) -> bool:
    """Whether ``a`` and ``b`` are one user or members of one team now (their ``membership`` relationships)."""
    if a.id == b.id:
        return True
    return a.membership is not None and b.membership is not None and a.membership.team_id == b.membership.team_id


def lock_row(session: Session, model: type[User] | type[Team] | type[EvalSet], row_id: int) -> None:
    """Hold the row until the transaction ends, so that checks made under the lock see every change committed by
    whoever held it before.

    SQLite has no row locks, and its transactions start as readers, so checks done in two of them at once both pass
    (20 uploads against a limit of 2 in flight: 10 accepted). A write takes the database's write lock at once and
    holds it until the commit: the checks that follow then see every change committed before.
    """
    if session.get_bind().dialect.name == "sqlite":
        session.execute(update(model).where(model.id == row_id).values(id=model.id))
    else:
        session.execute(select(model.id).where(model.id == row_id).with_for_update())


def lock_competitor(*, session: Session, user: User) -> None:
    """Lock the user's row, then their team's: one competitor's uploads, selections and membership changes are then
    checked one after the other (two members uploading at once both wait for the team's row). Always user first,
    then team, so that no two transactions wait for each other."""
    lock_row(session, User, user.id)
    team = team_of(session=session, user_id=user.id)
    if team is not None:
        lock_row(session, Team, team.id)
