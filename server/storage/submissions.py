"""Submissions: the upload quota, who may see one, the deadline, the final selection, cancel and disqualify."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import ColumnElement, func, select, update
from sqlalchemy.orm import Session, selectinload

from layersched.server.errors import Conflict, NotFound, QuotaExceeded, TooManyInFlight
from layersched.server.models import ACTIVE_STATES, Evaluation, Phase, Submission, User, utcnow
from layersched.server.storage.audit import add_log_entry
from layersched.server.storage.evaluations import new_evaluation
from layersched.server.storage.leaderboard import find_leaderboard_state
from layersched.server.storage.members import lock_competitor, member_ids, same_competitor, team_of
from layersched.server.storage.phases import closed_because
from layersched.server.storage.quota import count_in_flight, count_submissions_today
from layersched.server.storage.quota_grants import competitor_quota

# What every reader of a submission uses: its evaluations, its owner and its phase (with the phase's set).
_LOADED = (
    selectinload(Submission.evaluations),
    selectinload(Submission.owner).selectinload(User.membership),
    selectinload(Submission.phase).selectinload(Phase.evalset),
)


def check_can_submit(
    *,
    session: Session,
    user: User,
    phase: Phase,
    daily_quota: int,
    max_in_flight: int,
    now: dt.datetime | None = None,
) -> None:
    """Raise QuotaExceeded or TooManyInFlight when the participant may not submit to ``phase`` now (organisers always
    may). The quota is the phase's (``daily_quota`` when it has none) and counts the phase's submissions; the
    evaluations in flight are counted over every phase (they share the workers). Both are the participant's team's
    when they are in one (``quota``); the quota grows by the organisers' grants for the day (``quota_grants``)."""
    if user.role == "organiser":
        return
    now = now or utcnow()
    quota = competitor_quota(session=session, user_id=user.id, phase=phase, default=daily_quota, now=now)
    used = count_submissions_today(session=session, user_id=user.id, phase=phase, now=now)
    team = team_of(session=session, user_id=user.id)
    whose = f" by team {team.name!r}" if team is not None else ""
    if used >= quota:
        raise QuotaExceeded(
            f"daily quota of {quota} submissions to phase {phase.name!r} used ({used} today{whose}); it resets at "
            "00:00 UTC"
        )
    active = count_in_flight(session=session, user_id=user.id)
    if active >= max_in_flight:
        raise TooManyInFlight(
            f"{active} evaluations{whose} are already queued or running (at most {max_in_flight}); wait for one to "
            "finish"
        )


def lock_submitter(*, session: Session, user: User) -> None:
    """Hold the user's row and their team's until the transaction ends, so that one competitor's concurrent uploads
    are checked against the quota one after the other (without it a burst of 20 uploads got 3-5 past a limit of 2 in
    flight; ``members.lock_row`` says how SQLite is made to wait)."""
    lock_competitor(session=session, user=user)


def create_submission(
    *,
    session: Session,
    owner: User,
    name: str,
    description: str,
    bundle_sha256: str,
    bundle_format: str,
    bundle_bytes: int,
    phase: Phase,
    now: dt.datetime | None = None,
) -> tuple[Submission, Evaluation]:
    """A submission to ``phase`` and its initial evaluation (queued, on the phase's set), in one transaction. The
    caller holds the owner's lock (``lock_submitter``), so the team read here is the one the upload was checked
    against."""
    now = now or utcnow()
    team = team_of(session=session, user_id=owner.id)
    submission = Submission(
        owner_id=owner.id,
        team_id=team.id if team is not None else None,
        name=name,
        description=description,
        bundle_sha256=bundle_sha256,
        bundle_format=bundle_format,
        bundle_bytes=bundle_bytes,
        created_at=now,
        phase_id=phase.id,
    )
    session.add(submission)
    session.flush()
    evaluation = new_evaluation(session, submission, "initial", phase.evalset, now=now)
    session.commit()
    return submission, evaluation


def _visible(viewer: User | None, submission: Submission) -> bool:
    return viewer is not None and (viewer.role == "organiser" or same_competitor(viewer, submission.owner))


def get_submission(*, session: Session, submission_id: int, viewer: User | None) -> Submission:
    """The submission if ``viewer`` owns it, is in its owner's team now, or is an organiser; NotFound otherwise (no
    existence leak)."""
    submission = session.get(
        Submission,
        submission_id,
        options=_LOADED,
    )
    if submission is None or not _visible(viewer, submission):
        raise NotFound(f"submission {submission_id} does not exist")
    return submission


def load_submission(*, session: Session, submission_id: int) -> Submission:
    """The submission whoever asks (for the worker and for callers that checked visibility themselves)."""
    submission = session.get(
        Submission,
        submission_id,
        options=_LOADED,
    )
    if submission is None:
        raise NotFound(f"submission {submission_id} does not exist")
    return submission


def list_submissions(
    *, session: Session, viewer: User, offset: int = 0, limit: int = 50, phase: Phase | None = None
) -> tuple[list[Submission], int]:
    """The viewer's submissions and their team's, newest first (organisers: everyone's), and the total count; only
    those to ``phase`` when it is given."""
    where: list[ColumnElement[bool]] = []
    if viewer.role != "organiser":
        where.append(Submission.owner_id.in_(member_ids(session=session, user_id=viewer.id)))
    if phase is not None:
        where.append(Submission.phase_id == phase.id)
    total = session.scalar(select(func.count(Submission.id)).where(*where)) or 0
    rows = session.scalars(
        select(Submission).where(*where).options(*_LOADED).order_by(Submission.id.desc()).offset(offset).limit(limit)
    ).all()
    return list(rows), total


def _utc(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).isoformat()


def _closed_because(
    session: Session, *, phase: Phase, deadline: dt.datetime | None, now: dt.datetime, uploads: bool
) -> str | None:
    """Why the phase's uploads (``uploads``) or selection changes are closed at ``now``, or None while open.

    Publication closes both whatever the deadline says: the published private board is the phase's final ranking.
    The phase's own times close its uploads; selection stays open after them (the final choice is made once the
    uploads are in), until the deadline or publication.
    """
    state = find_leaderboard_state(session=session, phase=phase)
    if state is not None and state.private_published:
        when = f" at {_utc(state.published_at)}" if state.published_at else ""
        return f"the private leaderboard of phase {phase.name!r} was published{when}"
    if deadline is not None and now >= deadline:
        return f"the submission deadline {_utc(deadline)} has passed"
    return closed_because(phase, now) if uploads else None


def check_submissions_open(
    *, session: Session, user: User, phase: Phase, deadline: dt.datetime | None, now: dt.datetime | None = None
) -> None:
    """Raise Conflict when ``phase`` takes no uploads: before it opens, after it closes, after ``deadline``
    (Settings.submission_deadline) or the publication of its private board.

    Organisers' uploads never rank (the boards hold participants only), so they may still test the service.
    """
    if user.role == "organiser":
        return
    reason = _closed_because(session, phase=phase, deadline=deadline, now=now or utcnow(), uploads=True)
    if reason is not None:
        raise Conflict(f"{reason}; uploads are closed")


def _selection_target(
    session: Session, *, submission_id: int, viewer: User, deadline: dt.datetime | None, now: dt.datetime, verb: str
) -> Submission:
    """The submission whose selection ``viewer`` wants to change, once it is theirs to change and still open.

    Organisers may change a participant's selection (it is logged), but not after the close either: the final
    choice is the participant's, made without the private scores.
    """
    submission = get_submission(session=session, submission_id=submission_id, viewer=viewer)
    reason = _closed_because(session, phase=submission.phase, deadline=deadline, now=now, uploads=False)
    if reason is not None:
        raise Conflict(f"{reason}; submission {submission_id} cannot be {verb}")
    return submission


def select_submission(
    *,
    session: Session,
    submission_id: int,
    viewer: User,
    limit: int,
    deadline: dt.datetime | None,
    now: dt.datetime | None = None,
) -> Submission:
    """Add this submission to its owner's final selection (at most ``limit``, Settings.final_submissions).

    Only a scored (succeeded on its phase's evaluation set), not disqualified submission can be selected; selecting
    a selected one changes nothing. The limit holds per phase and per competitor: a team's members share it, and
    any of them may change the team's selection.
    """
    now = now or utcnow()
    submission = _selection_target(
        session, submission_id=submission_id, viewer=viewer, deadline=deadline, now=now, verb="selected"
    )
    if submission.disqualified_reason is not None:
        raise Conflict(f"submission {submission_id} is disqualified and cannot be selected")
    evalset = submission.phase.evalset
    if scored_evaluation(submission, evalset_name=evalset.name) is None:
        primary = primary_evaluation(submission)
        where = f"the evaluation set {evalset.name!r}"
        raise Conflict(
            f"submission {submission_id} has no score on {where} (it is {primary.state if primary else 'queued'}); "
            "only a scored submission can be selected"
        )
    # Two selections of one competitor at once must not both see room for one more.
    lock_submitter(session=session, user=submission.owner)
    chosen = list(
        session.scalars(
            select(Submission.id)
            .where(
                Submission.owner_id.in_(member_ids(session=session, user_id=submission.owner_id)),
                Submission.phase_id == submission.phase_id,
                Submission.selected.is_(True),
            )
            .order_by(Submission.selected_at, Submission.id)
        )
    )
    if submission_id in chosen:
        session.commit()  # nothing to change; ends the transaction and its lock
        return submission
    if len(chosen) >= limit:
        listed = ", ".join(f"#{i}" for i in chosen)
        team = team_of(session=session, user_id=submission.owner_id)
        who = f"team {team.name!r}" if team is not None else submission.owner.name
        raise Conflict(
            f"{who} has already selected {len(chosen)} submissions ({listed}), the most for the "
            f"final ranking of phase {submission.phase.name!r}; unselect one first"
        )
    submission.selected, submission.selected_at = True, now
    if viewer.role == "organiser" and viewer.id != submission.owner_id:
        add_log_entry(session, viewer, "select", f"submission:{submission_id}", {})
    session.commit()
    return submission


def unselect_submission(
    *, session: Session, submission_id: int, viewer: User, deadline: dt.datetime | None, now: dt.datetime | None = None
) -> Submission:
    """Take this submission out of its owner's final selection (unselecting an unselected one changes nothing)."""
    submission = _selection_target(
        session, submission_id=submission_id, viewer=viewer, deadline=deadline, now=now or utcnow(), verb="unselected"
    )
    if submission.selected:
        submission.selected, submission.selected_at = False, None
        if viewer.role == "organiser" and viewer.id != submission.owner_id:
            add_log_entry(session, viewer, "unselect", f"submission:{submission_id}", {})
    session.commit()
    return submission


def primary_evaluation(submission: Submission) -> Evaluation | None:
    """The newest non-audit evaluation: it gives the submission its state, progress and error."""
    candidates = [e for e in submission.evaluations if e.kind != "audit"]
    return max(candidates, key=lambda e: e.id) if candidates else None


def scored_evaluation(submission: Submission, *, evalset_name: str | None = None) -> Evaluation | None:
    """The newest succeeded non-audit evaluation (on ``evalset_name`` when given): it gives the scores."""
    candidates = [
        e
        for e in submission.evaluations
        if e.kind != "audit" and e.state == "succeeded" and (evalset_name is None or e.evalset_name == evalset_name)
    ]
    return max(candidates, key=lambda e: e.id) if candidates else None


def cancel_submission(
    *, session: Session, submission_id: int, actor: User, now: dt.datetime | None = None
) -> Submission:
    """Cancel the submission's queued and running evaluations; the worker sees it at its next heartbeat.

    Only evaluations still queued or running change (one conditional update): a result the worker commits
    meanwhile is kept, never overwritten with ``cancelled``. A cancelled initial evaluation gives the submission back
    to its owner's quota: the participant did not cause its end (organisers cancel; participants cannot).
    """
    submission = get_submission(session=session, submission_id=submission_id, viewer=actor)
    now = now or utcnow()
    message = f"cancelled by {actor.name}"
    cancelled = session.scalars(
        update(Evaluation)
        .where(Evaluation.submission_id == submission_id, Evaluation.state.in_(ACTIVE_STATES))
        .values(
            state="cancelled",
            finished_at=now,
            error_category="cancelled",
            error_message=message,
            public_error_message=message,
        )
        .returning(Evaluation.id)
    ).all()
    if not cancelled:
        session.rollback()
        raise Conflict(f"submission {submission_id} has no queued or running evaluation to cancel")
    refunded = any(e.id in cancelled and e.kind == "initial" for e in submission.evaluations)
    if refunded:
        submission.counts_against_quota = False
    detail = {"evaluations": sorted(cancelled), "refunded": refunded}
    add_log_entry(session, actor, "cancel", f"submission:{submission_id}", detail)
    session.commit()
    for evaluation in submission.evaluations:
        session.refresh(evaluation)
    return submission


def disqualify_submission(*, session: Session, submission_id: int, reason: str, actor: User) -> Submission:
    submission = get_submission(session=session, submission_id=submission_id, viewer=actor)
    submission.disqualified_reason = reason
    submission.selected = False
    add_log_entry(session, actor, "disqualify", f"submission:{submission_id}", {"reason": reason})
    session.commit()
    return submission
