"""What a competitor (a participant alone, or a team) has used of a phase's daily quota and of the evaluations in
flight: counted over every member's submissions (``members.member_ids``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from layersched.server.models import ACTIVE_STATES, Evaluation, Phase, Submission, utcnow
from layersched.server.storage.members import member_ids


def day_start(now: dt.datetime) -> dt.datetime:
    """The start of ``now``'s UTC day: quotas and grants count by it."""
    return now.astimezone(dt.timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)


def phase_quota(phase: Phase, default: int) -> int:
    """The daily quota of ``phase``: its own, else ``default`` (Settings.daily_quota)."""
    return phase.daily_quota if phase.daily_quota is not None else default


def count_owned_today(
    *, session: Session, owner_ids: Collection[int], phase: Phase | None = None, now: dt.datetime | None = None
) -> int:
    """Submissions of these users this UTC day (to ``phase``; None: to any) that count against the quota (not those
    the service failed)."""
    start = day_start(now or utcnow())
    where = [
        Submission.owner_id.in_(list(owner_ids)),
        Submission.created_at >= start,
        Submission.counts_against_quota.is_(True),
    ]
    if phase is not None:
        where.append(Submission.phase_id == phase.id)
    return session.scalar(select(func.count(Submission.id)).where(*where)) or 0


def count_submissions_today(
    *, session: Session, user_id: int, phase: Phase | None = None, now: dt.datetime | None = None
) -> int:
    """What the user's competitor (their team, else the user) submitted this UTC day, as :func:`count_owned_today`."""
    owners = member_ids(session=session, user_id=user_id)
    return count_owned_today(session=session, owner_ids=owners, phase=phase, now=now)


def count_owned_in_flight(*, session: Session, owner_ids: Collection[int]) -> int:
    """The queued or running initial evaluations of these users' submissions (organisers' reruns and audits do not
    count)."""
    return (
        session.scalar(
            select(func.count(Evaluation.id))
            .join(Submission, Evaluation.submission_id == Submission.id)
            .where(
                Submission.owner_id.in_(list(owner_ids)),
                Evaluation.kind == "initial",
                Evaluation.state.in_(ACTIVE_STATES),
            )
        )
        or 0
    )


def count_in_flight(*, session: Session, user_id: int) -> int:
    """What the user's competitor has in flight, as :func:`count_owned_in_flight`: a team shares one allowance of the
    workers, as it shares one quota."""
    return count_owned_in_flight(session=session, owner_ids=member_ids(session=session, user_id=user_id))
