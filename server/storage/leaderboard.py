"""Each phase's leaderboard state (frozen, private board published) and the queries of its boards."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, FromClause, Select, case, func, literal, select, true
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from layersched.server.models import (
    BaselineResult,
    Evaluation,
    LeaderboardState,
    Phase,
    Submission,
    Team,
    TeamMember,
    User,
    utcnow,
)
from layersched.server.storage.audit import add_log_entry


def get_leaderboard_state(*, session: Session, phase: Phase) -> LeaderboardState:
    """The state of ``phase``'s boards, made (not frozen, not published) when first asked for."""
    state = session.scalar(select(LeaderboardState).where(LeaderboardState.phase_id == phase.id))
    if state is None:
        state = LeaderboardState(phase_id=phase.id, frozen=False, private_published=False)
        session.add(state)
        try:
            session.commit()
        except IntegrityError:  # another request created it first
            session.rollback()
            state = session.scalar(select(LeaderboardState).where(LeaderboardState.phase_id == phase.id))
            assert state is not None
    return state


def find_leaderboard_state(*, session: Session, phase: Phase) -> LeaderboardState | None:
    """The state of ``phase``'s boards if it was ever made (reads only: a refused upload must write nothing)."""
    return session.scalar(select(LeaderboardState).where(LeaderboardState.phase_id == phase.id))


def set_leaderboard_frozen(
    *,
    session: Session,
    phase: Phase,
    frozen: bool,
    snapshot: dict[str, Any] | None,
    actor: User,
    now: dt.datetime | None = None,
) -> LeaderboardState:
    """Freeze (keeping ``snapshot``, the phase's leaderboards as they are now) or unfreeze its public leaderboard."""
    state = get_leaderboard_state(session=session, phase=phase)
    state.frozen = frozen
    state.frozen_at = (now or utcnow()) if frozen else None
    state.snapshot = snapshot if frozen else None
    add_log_entry(session, actor, "freeze" if frozen else "unfreeze", f"leaderboard:{phase.name}", {})
    session.commit()
    return state


def publish_private(
    *, session: Session, phase: Phase, actor: User, snapshot: dict[str, Any], now: dt.datetime | None = None
) -> LeaderboardState:
    """Publish the phase's private leaderboard as ``snapshot`` (its final ranking as it stands now), which is what
    it shows from then on. Publication is once: publishing again keeps the first snapshot. It closes the phase's
    uploads and selection.
    """
    state_id = get_leaderboard_state(session=session, phase=phase).id  # creates the row if needed
    # Locked so that two organisers publishing at once keep one snapshot, not the later of two.
    state = session.get(LeaderboardState, state_id, with_for_update=True, populate_existing=True)
    assert state is not None
    if not state.private_published:
        state.private_published, state.published_at = True, now or utcnow()
        state.private_snapshot = snapshot
    add_log_entry(session, actor, "publish_private", f"leaderboard:{phase.name}", {})
    session.commit()
    return state


# Who a board row is for: ("team", team id) for a team's members, ("user", user id) for a participant alone.
Competitor = tuple[str, int]


def _competitor_columns() -> tuple[Any, Any, Any]:
    """The columns that name a submission's competitor, with the outer joins they need (see :func:`_with_teams`):
    kind, id and name, the team's when its owner is in one now (Kaggle: a merged team's submissions are all its)."""
    kind = case((Team.id.is_not(None), literal("team")), else_=literal("user"))
    return kind, func.coalesce(Team.id, User.id), func.coalesce(Team.name, User.name)


def _with_teams(query: Select[Any]) -> Select[Any]:
    """``query`` (which joins ``User`` as the submissions' owners) with each owner's team now, if any."""
    return query.outerjoin(TeamMember, (TeamMember.user_id == User.id) & TeamMember.left_at.is_(None)).outerjoin(
        Team, Team.id == TeamMember.team_id
    )


@dataclass(frozen=True)
class ScoredEntry:
    """A leaderboard candidate: a submission with the overall score of its newest succeeded non-audit evaluation,
    who it competes for (its owner's team now, else its owner) and who it was made under (``origin``: its owner's
    team then, else its owner), whose Ladder it was a probe of."""

    submission_id: int
    competitor_kind: str
    competitor_id: int
    competitor_name: str
    name: str
    created_at: dt.datetime
    selected: bool
    selected_at: dt.datetime | None
    evaluation_id: int
    overall: float
    origin_team_id: int | None
    owner_id: int

    @property
    def competitor(self) -> Competitor:
        return (self.competitor_kind, self.competitor_id)

    @property
    def origin(self) -> Competitor:
        return origin_of(self.origin_team_id, self.owner_id)


def origin_of(team_id: int | None, owner_id: int) -> Competitor:
    """Whose Ladder a submission made by ``owner_id`` in team ``team_id`` (None: alone) is a probe of."""
    return ("team", team_id) if team_id is not None else ("user", owner_id)


def leaderboard_entries(*, session: Session, split: str, phase: Phase) -> list[ScoredEntry]:
    """Every participant's submission to ``phase`` that is not disqualified, with its latest scoring evaluation on
    the phase's set (what :func:`scored_evaluation` picks of one submission), as plain columns in one query.

    Loading every submission with its evaluations as ORM objects took 1.4 s with 10,000 submissions, and decoding
    10,000 score documents still 200 ms: this reads only each scoring evaluation's ``overall`` (about 30 ms).
    Unscored evaluations (no ``overall``) are left out. :func:`evaluation_scores` fetches the winners' documents.
    """
    scoring = select(Evaluation.submission_id, func.max(Evaluation.id).label("evaluation_id")).where(
        Evaluation.kind != "audit", Evaluation.state == "succeeded", Evaluation.evalset_name == phase.evalset.name
    )
    latest = scoring.group_by(Evaluation.submission_id).subquery()
    score = Evaluation.score_public if split == "public" else Evaluation.score_private
    overall = score["overall"].as_float()
    kind, competitor_id, competitor_name = _competitor_columns()
    query = (
        select(
            Submission.id,
            kind,
            competitor_id,
            competitor_name,
            Submission.name,
            Submission.created_at,
            Submission.selected,
            Submission.selected_at,
            Evaluation.id,
            overall,
            Submission.team_id,
            Submission.owner_id,
        )
        .join(User, Submission.owner_id == User.id)
        .join(latest, latest.c.submission_id == Submission.id)
        .join(Evaluation, Evaluation.id == latest.c.evaluation_id)
        .where(
            User.role == "participant",
            User.disabled_at.is_(None),  # a disabled user's rows leave the boards until they are enabled
            Submission.disqualified_reason.is_(None),
            Submission.phase_id == phase.id,
            overall.is_not(None),
        )
        .order_by(Submission.id)
    )
    return [ScoredEntry(*row) for row in session.execute(_with_teams(query))]


def count_submissions_by_competitor(*, session: Session, phase: Phase) -> dict[Competitor, int]:
    """How many submissions each competitor (team or participant alone) made to ``phase`` (its board shows them)."""
    kind, competitor_id, _name = _competitor_columns()
    query = (
        select(kind, competitor_id, func.count(Submission.id))
        .join(User, Submission.owner_id == User.id)
        .where(Submission.phase_id == phase.id)
        .group_by(kind, competitor_id)
    )
    return {(k, i): count for k, i, count in session.execute(_with_teams(query))}


def team_members(*, session: Session) -> dict[int, list[str]]:
    """Each team's members now, by name in the order they joined (the boards list them beside the team's name)."""
    rows = session.execute(
        select(TeamMember.team_id, User.name)
        .join(User, User.id == TeamMember.user_id)
        .where(TeamMember.left_at.is_(None))
        .order_by(TeamMember.id)
    )
    members: dict[int, list[str]] = {}
    for team_id, name in rows:
        members.setdefault(team_id, []).append(name)
    return members


def evaluation_scores(*, session: Session, split: str, evaluation_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """The ``split`` score documents of these evaluations, by evaluation id."""
    score = Evaluation.score_public if split == "public" else Evaluation.score_private
    rows = session.execute(select(Evaluation.id, score).where(Evaluation.id.in_(list(evaluation_ids))))
    return {evaluation_id: document for evaluation_id, document in rows}


def leaderboard_fingerprint(*, session: Session) -> tuple[Any, ...]:
    """Aggregates that change whenever anything a live leaderboard shows changes (one query of index scans).

    An evaluation that succeeds moves the succeeded evaluations' count and id sum; disqualifying and new submissions
    move the submission aggregates (the per-participant submission counts are shown); new baseline scores and new
    users move theirs. Freezing, publishing and the phase's set are read apart (they are each board's own).

    Disabling a user stamps ``disabled_at`` later than any before, so the newest stamp moves on every disabling and
    the count of disabled users on every enabling (the argument of the selections below).

    Teams move a board's rows: a membership is never deleted, only ended, so joins move the membership count and
    newest id, and leaves the count of ended ones.

    Selections: the count and id sum of the selected alone do not tell {1, 4} from {2, 3}. Each selection stamps
    ``selected_at`` with a later time than any before it, so the newest stamp moves on every selection and the count
    on every unselection: between two states with the same newest stamp, only unselections happened.
    """
    succeeded = (Evaluation.state == "succeeded") & (Evaluation.kind != "audit")
    selected = Submission.selected.is_(True)
    per_table: list[list[ColumnElement[Any]]] = [
        [
            func.count(Submission.id),
            func.count(Submission.id).filter(selected),
            func.sum(Submission.id).filter(selected),
            func.max(Submission.selected_at).filter(selected),
            func.sum(Submission.id).filter(Submission.disqualified_reason.is_not(None)),
        ],
        [func.count(Evaluation.id).filter(succeeded), func.sum(Evaluation.id).filter(succeeded)],
        [
            func.count(User.id),
            func.max(User.id),
            func.count(User.disabled_at),
            func.max(User.disabled_at),
        ],
        [func.count(BaselineResult.id), func.max(BaselineResult.created_at)],
        [func.count(TeamMember.id), func.max(TeamMember.id), func.count(TeamMember.left_at)],
    ]
    # One scan per table (a subquery each, so no join multiplies rows), one round trip in all.
    first, *others = [select(*aggregates).subquery() for aggregates in per_table]
    joined: FromClause = first
    for other in others:
        joined = joined.join(other, true())  # one row each: the cross join is that one row
    return tuple(session.execute(select(joined)).one())
