"""The organisers' view of submissions: filtered by phase, state, owner, team, failure category and time, with the
phase, team, state, failure category, queue wait and run time of each, and the failures grouped by category.

A submission's state, category and times are those of its primary evaluation (the newest that is not an audit),
as everywhere else. Everything is read in plain columns, in two queries: the counts (by state, category and the
service's fault, of every submission the filter's other criteria choose: the match count and the summary come out of
them) and the page (newest first, each submission's primary evaluation found by its index, so a page reads about as
many rows as it shows). With 11,000 submissions on PostgreSQL the counts take about 25 ms, the page 2-5 ms.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import ColumnElement, Join, Select, func, join, select
from sqlalchemy.orm import Session

from layersched.server.models import EVALUATION_STATES, Evaluation, Phase, Submission, Team, TeamMember, User
from layersched.server.storage.accounts import get_user_by_name
from layersched.server.storage.phases import get_phase
from layersched.server.storage.teams import get_team

# Not a category of its own: every failure the service caused (its evaluations marked ``infrastructure_failure``,
# whatever their category: ``infrastructure``, a bundle the upload should have refused), as the episode status of
# the service's own failures is named. ``admin rerun --state failed --category infrastructure_error`` reruns them.
SERVICE_FAILURES = "infrastructure_error"


@dataclass(frozen=True)
class SubmissionFilter:
    """Which submissions: every field None means any. ``owner`` and ``team`` are names, ``phase`` a phase's name."""

    phase: str | None = None
    state: str | None = None
    owner: str | None = None
    team: str | None = None
    category: str | None = None
    since: dt.datetime | None = None
    ids: tuple[int, ...] | None = None


@dataclass(frozen=True)
class SubmissionRow:
    id: int
    name: str
    owner: str
    team: str | None
    phase: str
    state: str
    category: str | None
    infrastructure_failure: bool
    disqualified: str | None
    created_at: dt.datetime
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    score: float | None  # the primary evaluation's public overall score

    def wait_s(self, now: dt.datetime) -> float | None:
        """Seconds from the upload until its evaluation started (until now while it waits); None when it never
        started (cancelled while queued)."""
        if self.started_at is not None:
            return max(0.0, (self.started_at - self.created_at).total_seconds())
        return (now - self.created_at).total_seconds() if self.state == "queued" else None

    def run_s(self, now: dt.datetime) -> float | None:
        """Seconds the evaluation ran (until now while it runs)."""
        if self.started_at is None:
            return None
        end = self.finished_at or (now if self.state == "running" else None)
        return (end - self.started_at).total_seconds() if end is not None else None


@dataclass(frozen=True)
class Summary:
    states: dict[str, int]  # submissions by state, over every filter but state and category
    failures: dict[str, int]  # failed submissions by category, the same way; SERVICE_FAILURES counts the service's
    matching: int  # submissions the whole filter chooses


def primary_evaluations() -> Select[int, int]:
    """(submission id, id of its primary evaluation) for every submission that has one."""
    return (
        select(Evaluation.submission_id, func.max(Evaluation.id).label("evaluation_id"))
        .where(Evaluation.kind != "audit")
        .group_by(Evaluation.submission_id)
    )


def _where(session: Session, chosen: SubmissionFilter, *, with_state: bool) -> list[ColumnElement[bool]]:
    """The filter as conditions on Submission and the primary Evaluation; unknown names are NotFound (named)."""
    where: list[ColumnElement[bool]] = []
    if chosen.phase is not None:
        where.append(Submission.phase_id == get_phase(session=session, name=chosen.phase).id)
    if chosen.owner is not None:
        where.append(Submission.owner_id == get_user_by_name(session=session, name=chosen.owner).id)
    if chosen.team is not None:
        team = get_team(session=session, name=chosen.team)
        members = select(TeamMember.user_id).where(TeamMember.team_id == team.id, TeamMember.left_at.is_(None))
        where.append(Submission.owner_id.in_(members.scalar_subquery()))
    if chosen.since is not None:
        where.append(Submission.created_at >= chosen.since)
    if chosen.ids is not None:
        where.append(Submission.id.in_(chosen.ids))
    if with_state:
        if chosen.state is not None:
            if chosen.state not in EVALUATION_STATES:
                raise ValueError(f"state must be one of {', '.join(EVALUATION_STATES)}, got {chosen.state!r}")
            where.append(Evaluation.state == chosen.state)
        if chosen.category == SERVICE_FAILURES:
            where.append(Evaluation.infrastructure_failure.is_(True))
        elif chosen.category is not None:
            where.append(Evaluation.error_category == chosen.category)
    return where


def _primary_joined() -> Join:
    """Submissions joined with their primary evaluation, by one aggregate over the evaluations (the plan for reading
    them all: counting)."""
    primary = primary_evaluations().subquery()
    return join(Submission, primary, primary.c.submission_id == Submission.id).join(
        Evaluation, Evaluation.id == primary.c.evaluation_id
    )


def _primary_of_each() -> Join:
    """Submissions joined with their primary evaluation, found per submission through the evaluations' index on
    ``submission_id`` (the plan for reading a page of them)."""
    newest = (
        select(func.max(Evaluation.id))
        .where(Evaluation.submission_id == Submission.id, Evaluation.kind != "audit")
        .correlate(Submission)
        .scalar_subquery()
    )
    return join(Submission, Evaluation, Evaluation.id == newest)


def list_submission_rows(
    *, session: Session, chosen: SubmissionFilter, offset: int = 0, limit: int = 50
) -> list[SubmissionRow]:
    """A page of the chosen submissions, newest first (``summarise`` counts them)."""
    where = _where(session, chosen, with_state=True)
    query = (
        select(
            Submission.id,
            Submission.name,
            User.name,
            Team.name,
            Phase.name,
            Evaluation.state,
            Evaluation.error_category,
            Evaluation.infrastructure_failure,
            Submission.disqualified_reason,
            Submission.created_at,
            Evaluation.started_at,
            Evaluation.finished_at,
            Evaluation.score_public["overall"].as_float(),
        )
        .select_from(_primary_of_each())
        .join(User, User.id == Submission.owner_id)
        .join(Phase, Phase.id == Submission.phase_id)
        .outerjoin(TeamMember, (TeamMember.user_id == User.id) & TeamMember.left_at.is_(None))
        .outerjoin(Team, Team.id == TeamMember.team_id)
        .where(*where)
        .order_by(Submission.id.desc())
        .offset(offset)
        .limit(limit)
    )
    return [SubmissionRow(*tuple(row)) for row in session.execute(query)]


def _chosen_by(chosen: SubmissionFilter, state: str, category: str | None, service: bool) -> bool:
    if chosen.state is not None and state != chosen.state:
        return False
    if chosen.category == SERVICE_FAILURES:
        return service
    return chosen.category is None or category == chosen.category


def summarise(*, session: Session, chosen: SubmissionFilter) -> Summary:
    """Counts by state, and of the failed ones by category, of the submissions the filter chooses but for its state
    and category (so that the organiser sees what the other states and categories hold), and how many the whole
    filter chooses; one grouped query."""
    where = _where(session, chosen, with_state=False)
    groups = session.execute(
        select(
            Evaluation.state, Evaluation.error_category, Evaluation.infrastructure_failure, func.count(Submission.id)
        )
        .select_from(_primary_joined())
        .where(*where)
        .group_by(Evaluation.state, Evaluation.error_category, Evaluation.infrastructure_failure)
    )
    states = dict.fromkeys(EVALUATION_STATES, 0)
    failures: dict[str, int] = {}
    matching = 0
    for state, category, service, count in groups:
        states[state] = states.get(state, 0) + count
        if state == "failed":
            failures[category or "unknown"] = failures.get(category or "unknown", 0) + count
            if service:
                failures[SERVICE_FAILURES] = failures.get(SERVICE_FAILURES, 0) + count
        if _chosen_by(chosen, state, category, service):
            matching += count
    ordered = dict(sorted(failures.items(), key=lambda kv: (-kv[1], kv[0])))
    return Summary(states=states, failures=ordered, matching=matching)


def chosen_ids(*, session: Session, chosen: SubmissionFilter, limit: int) -> list[int]:
    """The ids of the chosen submissions, oldest first, at most ``limit`` + 1 (the caller refuses more)."""
    query = select(Submission.id).select_from(_primary_joined()).where(*_where(session, chosen, with_state=True))
    return list(session.scalars(query.order_by(Submission.id).limit(limit + 1)))
