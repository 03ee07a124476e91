"""Every read and write of the database, as keyword-only typed functions.

Routes, the admin CLI and the worker call these; none of them repeats ``session.add``/``commit``. Functions that
change state commit before returning, so each is one transaction. The worker's calls (``start_evaluation``,
``heartbeat``, ``record_episode_result``, ``finish_evaluation``) are idempotent: a task that is delivered twice, or
resumes after its worker died, writes the same rows again instead of new ones.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, FromClause, func, select, true, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from layersched.server.errors import Conflict, NotFound, QuotaExceeded, TooManyInFlight
from layersched.server.models import (
    ACTIVE_STATES,
    EVALUATION_STATES,
    TERMINAL_STATES,
    ApiToken,
    AuditLogEntry,
    BaselineResult,
    EpisodeResult,
    EvalSet,
    Evaluation,
    LeaderboardState,
    Submission,
    User,
    utcnow,
)

TOKEN_PREFIX = "lst"
INFRASTRUCTURE = "infrastructure"

# ---------------------------------------------------------------------------------------------------- users, tokens


def create_user(
    *, session: Session, name: str, email: str, role: str = "participant", actor: User | None = None
) -> User:
    """A new user; ``actor`` is the organiser doing it (None: the admin CLI), recorded in the audit log."""
    if role not in ("participant", "organiser"):
        raise ValueError(f"role must be 'participant' or 'organiser', got {role!r}")
    taken = session.scalar(select(User).where((User.name == name) | (User.email == email)))
    if taken is not None:
        field = "name" if taken.name == name else "email"
        raise Conflict(f"a user with {field} {name if field == 'name' else email!r} already exists")
    user = User(name=name, email=email, role=role)
    session.add(user)
    try:
        session.flush()
    except IntegrityError as exc:  # a concurrent request took the name or email first
        session.rollback()
        raise Conflict(f"a user with name {name!r} or email {email!r} already exists") from exc
    _log(session, actor, "create_user", f"user:{user.id}", {"name": name, "role": role})
    session.commit()
    return user


def get_user(*, session: Session, user_id: int) -> User:
    user = session.get(User, user_id)
    if user is None:
        raise NotFound(f"user {user_id} does not exist")
    return user


def get_user_by_name(*, session: Session, name: str) -> User:
    user = session.scalar(select(User).where(User.name == name))
    if user is None:
        raise NotFound(f"user {name!r} does not exist")
    return user


def _hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def issue_token(*, session: Session, user_id: int, actor: User | None = None) -> tuple[ApiToken, str]:
    """A new token for the user; the plain token is returned once and only its SHA-256 is stored."""
    get_user(session=session, user_id=user_id)
    lookup = secrets.token_hex(8)
    plain = f"{TOKEN_PREFIX}_{lookup}_{secrets.token_urlsafe(32)}"
    token = ApiToken(user_id=user_id, lookup=lookup, token_sha256=_hash_token(plain))
    session.add(token)
    session.flush()
    _log(session, actor, "issue_token", f"user:{user_id}", {"token": token.id})
    session.commit()
    return token, plain


def revoke_token(
    *, session: Session, token_id: int, actor: User | None = None, now: dt.datetime | None = None
) -> ApiToken:
    token = session.get(ApiToken, token_id)
    if token is None:
        raise NotFound(f"token {token_id} does not exist")
    if token.revoked_at is None:
        token.revoked_at = now or utcnow()
    _log(session, actor, "revoke_token", f"user:{token.user_id}", {"token": token_id})
    session.commit()
    return token


def end_page_sessions(*, session: Session, token_id: int) -> None:
    """Sign-out: every page session signed in with ``token_id`` ends (see ``ApiToken.session_generation``)."""
    # One UPDATE, so two sign-outs at once both count.
    session.execute(
        update(ApiToken).where(ApiToken.id == token_id).values(session_generation=ApiToken.session_generation + 1)
    )
    session.commit()


def authenticate(*, session: Session, token: str, now: dt.datetime | None = None) -> User | None:
    """The user owning ``token``, or None for a malformed, unknown or revoked token."""
    parts = token.split("_", 2)
    if len(parts) != 3 or parts[0] != TOKEN_PREFIX or "\x00" in token:  # PostgreSQL refuses NUL in a query
        return None
    row = session.scalar(select(ApiToken).where(ApiToken.lookup == parts[1]))
    if row is None or row.revoked_at is not None:
        return None
    # The lookup part finds the row; the secret is compared in constant time so timing reveals nothing of it.
    if not hmac.compare_digest(row.token_sha256, _hash_token(token)):
        return None
    now = now or utcnow()
    # Recorded at minute resolution: a write per request would contend with the worker on SQLite.
    if row.last_used_at is None or now - row.last_used_at > dt.timedelta(minutes=1):
        row.last_used_at = now
        session.commit()
    return row.user


# -------------------------------------------------------------------------------------------------- evaluation sets


def register_evalset(
    *,
    session: Session,
    name: str,
    commitment: str,
    path: str,
    scenarios: Sequence[dict[str, Any]],
    current: bool = True,
) -> EvalSet:
    """Add an evaluation set (or update the one with this name); ``current`` makes new submissions use it.

    ``scenarios`` is what participants may see: ``[{"name", "weight", "public_episodes"}]``.
    """
    row = session.scalar(select(EvalSet).where(EvalSet.name == name))
    if row is None:
        row = EvalSet(name=name, commitment=commitment, path=path, scenarios=list(scenarios))
        session.add(row)
    else:
        row.commitment, row.path, row.scenarios = commitment, path, list(scenarios)
    if current:
        session.execute(update(EvalSet).where(EvalSet.name != name).values(current=False))
        row.current = True
    session.commit()
    return row


def get_current_evalset(*, session: Session) -> EvalSet | None:
    return session.scalar(select(EvalSet).where(EvalSet.current.is_(True)))


def get_evalset(*, session: Session, name: str) -> EvalSet:
    row = session.scalar(select(EvalSet).where(EvalSet.name == name))
    if row is None:
        raise NotFound(f"evaluation set {name!r} does not exist")
    return row


def reveal_evalset(*, session: Session, name: str, actor: User, now: dt.datetime | None = None) -> EvalSet:
    row = get_evalset(session=session, name=name)
    if not row.revealed:
        row.revealed, row.revealed_at = True, now or utcnow()
    _log(session, actor, "reveal_evalset", f"evalset:{name}", {"commitment": row.commitment})
    session.commit()
    return row


# ------------------------------------------------------------------------------------------------------ submissions


def _day_start(now: dt.datetime) -> dt.datetime:
    return now.astimezone(dt.timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)


def count_submissions_today(*, session: Session, owner_id: int, now: dt.datetime | None = None) -> int:
    """Submissions of this UTC day that count against the quota (not those the service failed)."""
    start = _day_start(now or utcnow())
    return (
        session.scalar(
            select(func.count(Submission.id)).where(
                Submission.owner_id == owner_id,
                Submission.created_at >= start,
                Submission.counts_against_quota.is_(True),
            )
        )
        or 0
    )


def count_in_flight(*, session: Session, owner_id: int) -> int:
    """The participant's own queued or running evaluations (organisers' reruns and audits do not count)."""
    return (
        session.scalar(
            select(func.count(Evaluation.id))
            .join(Submission, Evaluation.submission_id == Submission.id)
            .where(
                Submission.owner_id == owner_id,
                Evaluation.kind == "initial",
                Evaluation.state.in_(ACTIVE_STATES),
            )
        )
        or 0
    )


def check_can_submit(
    *, session: Session, user: User, daily_quota: int, max_in_flight: int, now: dt.datetime | None = None
) -> None:
    """Raise QuotaExceeded or TooManyInFlight when the participant may not submit now (organisers always may)."""
    if user.role == "organiser":
        return
    used = count_submissions_today(session=session, owner_id=user.id, now=now)
    if used >= daily_quota:
        raise QuotaExceeded(f"daily quota of {daily_quota} submissions used ({used} today); it resets at 00:00 UTC")
    active = count_in_flight(session=session, owner_id=user.id)
    if active >= max_in_flight:
        raise TooManyInFlight(
            f"{active} evaluations are already queued or running (at most {max_in_flight}); wait for one to finish"
        )


def lock_submitter(*, session: Session, user: User) -> None:
    """Hold the user's row until the transaction ends, so one participant's concurrent uploads are checked against
    the quota one after the other (without it a burst of 20 uploads got 3-5 past a limit of 2 in flight).

    SQLite has no row locks, and its transactions start as readers, so checks done in two of them at once both pass
    (20 uploads against a limit of 2 in flight: 10 accepted). A write takes the database's write lock at once and
    holds it until the commit: the checks that follow then see every submission committed before.
    """
    if session.get_bind().dialect.name == "sqlite":
        session.execute(update(User).where(User.id == user.id).values(id=User.id))
    else:
        session.execute(select(User.id).where(User.id == user.id).with_for_update())


def create_submission(
    *,
    session: Session,
    owner: User,
    name: str,
    description: str,
    bundle_sha256: str,
    bundle_format: str,
    bundle_bytes: int,
    evalset: EvalSet,
    now: dt.datetime | None = None,
) -> tuple[Submission, Evaluation]:
    """A submission and its initial evaluation (queued), in one transaction."""
    now = now or utcnow()
    submission = Submission(
        owner_id=owner.id,
        name=name,
        description=description,
        bundle_sha256=bundle_sha256,
        bundle_format=bundle_format,
        bundle_bytes=bundle_bytes,
        created_at=now,
    )
    session.add(submission)
    session.flush()
    evaluation = _new_evaluation(session, submission, "initial", evalset, now=now)
    session.commit()
    return submission, evaluation


def _new_evaluation(
    session: Session,
    submission: Submission,
    kind: str,
    evalset: EvalSet,
    *,
    now: dt.datetime,
    requested_by: User | None = None,
    audit_of: Evaluation | None = None,
    audit_sample: int | None = None,
) -> Evaluation:
    evaluation = Evaluation(
        submission_id=submission.id,
        kind=kind,
        evalset_name=evalset.name,
        evalset_commitment=evalset.commitment,
        state="queued",
        created_at=now,
        requested_by_id=requested_by.id if requested_by else None,
        audit_of_id=audit_of.id if audit_of else None,
        audit_sample=audit_sample,
    )
    session.add(evaluation)
    session.flush()
    return evaluation


def _visible(viewer: User | None, submission: Submission) -> bool:
    return viewer is not None and (viewer.role == "organiser" or viewer.id == submission.owner_id)


def get_submission(*, session: Session, submission_id: int, viewer: User | None) -> Submission:
    """The submission if ``viewer`` owns it or is an organiser; NotFound otherwise (no existence leak)."""
    submission = session.get(
        Submission, submission_id, options=[selectinload(Submission.evaluations), selectinload(Submission.owner)]
    )
    if submission is None or not _visible(viewer, submission):
        raise NotFound(f"submission {submission_id} does not exist")
    return submission


def load_submission(*, session: Session, submission_id: int) -> Submission:
    """The submission whoever asks (for the worker and for callers that checked visibility themselves)."""
    submission = session.get(
        Submission, submission_id, options=[selectinload(Submission.evaluations), selectinload(Submission.owner)]
    )
    if submission is None:
        raise NotFound(f"submission {submission_id} does not exist")
    return submission


def list_submissions(
    *, session: Session, viewer: User, offset: int = 0, limit: int = 50
) -> tuple[list[Submission], int]:
    """The viewer's submissions, newest first (organisers: everyone's), and the total count."""
    where: list[ColumnElement[bool]] = [] if viewer.role == "organiser" else [Submission.owner_id == viewer.id]
    total = session.scalar(select(func.count(Submission.id)).where(*where)) or 0
    rows = session.scalars(
        select(Submission)
        .where(*where)
        .options(selectinload(Submission.evaluations), selectinload(Submission.owner))
        .order_by(Submission.id.desc())
        .offset(offset)
        .limit(limit)
    ).all()
    return list(rows), total


def _utc(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).isoformat()


def _closed_because(session: Session, *, deadline: dt.datetime | None, now: dt.datetime) -> str | None:
    """Why uploads and selection changes are closed at ``now``, or None while they are open.

    Publication closes them whatever the deadline says: the published private board is the final ranking.
    """
    # Read only (get_leaderboard_state would create the row): a refused upload must write nothing.
    state = session.get(LeaderboardState, 1)
    if state is not None and state.private_published:
        when = f" at {_utc(state.published_at)}" if state.published_at else ""
        return f"the private leaderboard was published{when}"
    if deadline is not None and now >= deadline:
        return f"the submission deadline {_utc(deadline)} has passed"
    return None


def check_submissions_open(
    *, session: Session, user: User, deadline: dt.datetime | None, now: dt.datetime | None = None
) -> None:
    """Raise Conflict when uploads are closed: after ``deadline`` (Settings.submission_deadline) or publication.

    Organisers' uploads never rank (the boards hold participants only), so they may still test the service.
    """
    if user.role == "organiser":
        return
    reason = _closed_because(session, deadline=deadline, now=now or utcnow())
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
    reason = _closed_because(session, deadline=deadline, now=now)
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

    Only a scored (succeeded on the current evaluation set), not disqualified submission can be selected; selecting
    a selected one changes nothing.
    """
    now = now or utcnow()
    submission = _selection_target(
        session, submission_id=submission_id, viewer=viewer, deadline=deadline, now=now, verb="selected"
    )
    if submission.disqualified_reason is not None:
        raise Conflict(f"submission {submission_id} is disqualified and cannot be selected")
    evalset = get_current_evalset(session=session)
    if evalset is None or scored_evaluation(submission, evalset_name=evalset.name) is None:
        primary = primary_evaluation(submission)
        where = f"the evaluation set {evalset.name!r}" if evalset else "any evaluation set"
        raise Conflict(
            f"submission {submission_id} has no score on {where} (it is {primary.state if primary else 'queued'}); "
            "only a scored submission can be selected"
        )
    # Two selections of one participant at once must not both see room for one more.
    lock_submitter(session=session, user=submission.owner)
    chosen = list(
        session.scalars(
            select(Submission.id)
            .where(Submission.owner_id == submission.owner_id, Submission.selected.is_(True))
            .order_by(Submission.selected_at, Submission.id)
        )
    )
    if submission_id in chosen:
        session.commit()  # nothing to change; ends the transaction and its lock
        return submission
    if len(chosen) >= limit:
        listed = ", ".join(f"#{i}" for i in chosen)
        raise Conflict(
            f"{submission.owner.name} has already selected {len(chosen)} submissions ({listed}), the most for the "
            "final ranking; unselect one first"
        )
    submission.selected, submission.selected_at = True, now
    if viewer.id != submission.owner_id:
        _log(session, viewer, "select", f"submission:{submission_id}", {})
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
        if viewer.id != submission.owner_id:
            _log(session, viewer, "unselect", f"submission:{submission_id}", {})
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
    meanwhile is kept, never overwritten with ``cancelled``.
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
    _log(session, actor, "cancel", f"submission:{submission_id}", {"evaluations": sorted(cancelled)})
    session.commit()
    for evaluation in submission.evaluations:
        session.refresh(evaluation)
    return submission


def disqualify_submission(*, session: Session, submission_id: int, reason: str, actor: User) -> Submission:
    submission = get_submission(session=session, submission_id=submission_id, viewer=actor)
    submission.disqualified_reason = reason
    submission.selected = False
    _log(session, actor, "disqualify", f"submission:{submission_id}", {"reason": reason})
    session.commit()
    return submission


# ------------------------------------------------------------------------------------------------------ evaluations


def get_evaluation(*, session: Session, evaluation_id: int) -> Evaluation:
    evaluation = session.get(Evaluation, evaluation_id)
    if evaluation is None:
        raise NotFound(f"evaluation {evaluation_id} does not exist")
    return evaluation


def create_rerun(
    *, session: Session, submission_id: int, evalset_name: str | None, actor: User, now: dt.datetime | None = None
) -> Evaluation:
    """A new evaluation (kind rerun) of an existing submission; never a new submission, never quota."""
    submission = get_submission(session=session, submission_id=submission_id, viewer=actor)
    evalset = _evalset_or_current(session, evalset_name)
    evaluation = _new_evaluation(session, submission, "rerun", evalset, now=now or utcnow(), requested_by=actor)
    _log(session, actor, "rerun", f"submission:{submission_id}", {"evaluation": evaluation.id, "evalset": evalset.name})
    session.commit()
    return evaluation


def create_audit(
    *, session: Session, submission_id: int, sample: int | None, actor: User, now: dt.datetime | None = None
) -> Evaluation:
    """A new evaluation (kind audit) that replays the submission's newest succeeded evaluation."""
    submission = get_submission(session=session, submission_id=submission_id, viewer=actor)
    if sample is not None and sample < 1:
        raise ValueError(f"an audit sample must be at least 1 episode, got {sample}")
    target = scored_evaluation(submission)
    if target is None:
        raise Conflict(f"submission {submission_id} has no succeeded evaluation to audit")
    evalset = get_evalset(session=session, name=target.evalset_name)
    evaluation = _new_evaluation(
        session,
        submission,
        "audit",
        evalset,
        now=now or utcnow(),
        requested_by=actor,
        audit_of=target,
        audit_sample=sample,
    )
    _log(session, actor, "audit", f"submission:{submission_id}", {"evaluation": evaluation.id, "of": target.id})
    session.commit()
    return evaluation


def _evalset_or_current(session: Session, name: str | None) -> EvalSet:
    if name is not None:
        return get_evalset(session=session, name=name)
    current = get_current_evalset(session=session)
    if current is None:
        raise Conflict("no evaluation set is registered; an organiser must register one first")
    return current


def start_evaluation(
    *,
    session: Session,
    evaluation_id: int,
    worker_id: str,
    total: int,
    sim_version: str,
    image_digest: str | None,
    sandbox: str,
    live_within: dt.timedelta | None = None,
    now: dt.datetime | None = None,
) -> Evaluation | None:
    """The worker takes an evaluation: running, attempts + 1, heartbeat now. Idempotent across redeliveries.

    ``image_digest`` may be None when the sandbox is not started yet (``record_sandbox`` adds it then).

    Returns None when the worker must not run it (the row is gone, or it was cancelled or already finished, or
    another worker runs it and sent a heartbeat within ``live_within``: a duplicate message); the task then exits
    quietly. Episodes already recorded by an earlier attempt stay: the worker skips them.
    """
    now = now or utcnow()
    evaluation = session.get(Evaluation, evaluation_id, with_for_update=True, populate_existing=True)
    if evaluation is None or evaluation.state in TERMINAL_STATES:
        session.rollback()
        return None
    if (
        live_within is not None
        and evaluation.state == "running"
        and evaluation.worker_id != worker_id
        and evaluation.heartbeat_at is not None
        and evaluation.heartbeat_at > now - live_within
    ):
        session.rollback()
        return None
    evaluation.state = "running"
    evaluation.attempts += 1
    evaluation.worker_id = worker_id
    evaluation.heartbeat_at = now
    evaluation.started_at = evaluation.started_at or now
    evaluation.progress_total = total
    evaluation.progress_done = _count_episodes(session, evaluation_id)
    evaluation.public_progress_done = _count_episodes(session, evaluation_id, hidden=False)
    evaluation.sim_version, evaluation.image_digest, evaluation.sandbox = sim_version, image_digest, sandbox
    session.commit()
    return evaluation


def record_sandbox(*, session: Session, evaluation_id: int, image_digest: str, sandbox: str) -> None:
    """The sandbox an evaluation runs in, once it is started (audits compare the image digest)."""
    session.execute(
        update(Evaluation).where(Evaluation.id == evaluation_id).values(image_digest=image_digest, sandbox=sandbox)
    )
    session.commit()


def heartbeat(*, session: Session, evaluation_id: int, worker_id: str, now: dt.datetime | None = None) -> bool:
    """Record that the worker is alive; False means stop (cancelled, finished, or taken over by another worker)."""
    result = session.execute(
        update(Evaluation)
        .where(Evaluation.id == evaluation_id, Evaluation.state == "running", Evaluation.worker_id == worker_id)
        .values(heartbeat_at=now or utcnow())
    )
    session.commit()
    return bool(result.rowcount)  # type: ignore[attr-defined]


def _count_episodes(session: Session, evaluation_id: int, *, hidden: bool | None = None) -> int:
    where = [EpisodeResult.evaluation_id == evaluation_id]
    if hidden is not None:
        where.append(EpisodeResult.hidden.is_(hidden))
    return session.scalar(select(func.count(EpisodeResult.id)).where(*where)) or 0


def recorded_episodes(*, session: Session, evaluation_id: int) -> set[tuple[str, str]]:
    """(scenario, episode_id) pairs already written: a resumed evaluation skips them."""
    rows = session.execute(
        select(EpisodeResult.scenario, EpisodeResult.episode_id).where(EpisodeResult.evaluation_id == evaluation_id)
    )
    return {(scenario, episode) for scenario, episode in rows}


def record_episode_result(
    *,
    session: Session,
    evaluation_id: int,
    scenario: str,
    episode_id: str,
    split: str,
    hidden: bool,
    status: str,
    step: int | None = None,
    message: str = "",
    mean_completion: float | None = None,
    p95_completion: float | None = None,
    cloud_share: float | None = None,
    trace_hash: str | None = None,
    n_actions: int = 0,
    stdout: str | None = None,
    stderr: str | None = None,
    now: dt.datetime | None = None,
) -> EpisodeResult:
    """Write one episode's outcome (an upsert on (evaluation, scenario, episode)) and update the progress.

    ``hidden`` episodes (keyed workloads) drop stdout and stderr here, whatever the worker passes; their
    ``message`` is kept for organisers (participants see ``status`` and ``step`` only: ``presenters``).
    """
    values: dict[str, Any] = {
        "evaluation_id": evaluation_id,
        "scenario": scenario,
        "episode_id": episode_id,
        "split": split,
        "hidden": hidden,
        "status": status,
        "step": step,
        "message": message,
        "mean_completion": mean_completion,
        "p95_completion": p95_completion,
        "cloud_share": cloud_share,
        "trace_hash": trace_hash,
        "n_actions": n_actions,
        "stdout": None if hidden else stdout,
        "stderr": None if hidden else stderr,
        "recorded_at": now or utcnow(),
    }
    dialect = session.get_bind().dialect.name
    if dialect not in ("postgresql", "sqlite"):  # pragma: no cover - the two supported backends
        raise NotImplementedError(f"record_episode_result has no upsert for dialect {dialect!r}")
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(EpisodeResult).values(**values)
    keys = ("evaluation_id", "scenario", "episode_id")
    statement = statement.on_conflict_do_update(
        index_elements=list(keys), set_={k: statement.excluded[k] for k in values if k not in keys}
    )
    # Lock the evaluation first: writes of one evaluation then take turns, so the progress count below sees every
    # committed episode (under READ COMMITTED a concurrent writer's row would otherwise be missed).
    evaluation = session.get(Evaluation, evaluation_id, with_for_update=True, populate_existing=True)
    if evaluation is None:
        session.rollback()
        raise NotFound(f"evaluation {evaluation_id} does not exist")
    session.execute(statement)
    evaluation.progress_done = _count_episodes(session, evaluation_id)
    evaluation.public_progress_done = _count_episodes(session, evaluation_id, hidden=False)
    session.commit()
    row = session.scalar(
        select(EpisodeResult).where(
            EpisodeResult.evaluation_id == evaluation_id,
            EpisodeResult.scenario == scenario,
            EpisodeResult.episode_id == episode_id,
        )
    )
    assert row is not None
    session.refresh(row)
    return row


def finish_evaluation(
    *,
    session: Session,
    evaluation_id: int,
    state: str,
    score_public: dict[str, Any] | None = None,
    score_private: dict[str, Any] | None = None,
    error_category: str | None = None,
    error_message: str | None = None,
    public_error_message: str | None = None,
    infrastructure_failure: bool = False,
    audit: dict[str, Any] | None = None,
    now: dt.datetime | None = None,
) -> Evaluation | None:
    """End an evaluation: ``succeeded`` with scores (and ``audit`` for audits) or ``failed`` with a reason.

    A score is ``{"overall", "ci_low", "ci_high", "per_scenario": {scenario: ratio}}``. A failure needs an
    ``error_category`` (an episode status such as ``timeout`` or ``import_error``, or ``infrastructure``) and a
    message, which is for organisers; ``public_error_message`` is what the participant may read of it (None: the
    category only). ``infrastructure_failure=True`` gives the submission back to the participant's daily quota.
    Returns None if the evaluation was cancelled meanwhile (nothing is changed); finishing twice keeps the first
    outcome.
    """
    if state not in ("succeeded", "failed"):
        raise ValueError(f"an evaluation finishes as 'succeeded' or 'failed', got {state!r}")
    if state == "failed" and not (error_category and error_message):
        raise ValueError("a failed evaluation needs an error_category and an error_message")
    evaluation = session.get(Evaluation, evaluation_id, with_for_update=True, populate_existing=True)
    if evaluation is None:
        raise NotFound(f"evaluation {evaluation_id} does not exist")
    if evaluation.state == "cancelled":
        session.rollback()
        return None
    if evaluation.state in TERMINAL_STATES:
        session.rollback()
        return evaluation
    evaluation.state = state
    evaluation.finished_at = now or utcnow()
    evaluation.score_public, evaluation.score_private, evaluation.audit = score_public, score_private, audit
    evaluation.error_category, evaluation.error_message = error_category, error_message
    evaluation.public_error_message = public_error_message
    evaluation.infrastructure_failure = infrastructure_failure
    evaluation.progress_done = _count_episodes(session, evaluation_id)
    evaluation.public_progress_done = _count_episodes(session, evaluation_id, hidden=False)
    if state == "failed" and infrastructure_failure and evaluation.kind == "initial":
        evaluation.submission.counts_against_quota = False
    session.commit()
    return evaluation


def list_stale_evaluations(*, session: Session, now: dt.datetime, timeout: dt.timedelta) -> list[Evaluation]:
    """Running evaluations whose last heartbeat is older than ``timeout`` (their worker is presumably gone)."""
    return list(
        session.scalars(
            select(Evaluation)
            .where(Evaluation.state == "running", Evaluation.heartbeat_at < now - timeout)
            .order_by(Evaluation.id)
        )
    )


def requeue_evaluation(*, session: Session, evaluation_id: int) -> Evaluation | None:
    """Put a running (stale) evaluation back to queued so it can be sent again; None if it already ended."""
    evaluation = session.get(Evaluation, evaluation_id, with_for_update=True, populate_existing=True)
    if evaluation is None or evaluation.state in TERMINAL_STATES:
        session.rollback()
        return None
    evaluation.state, evaluation.worker_id = "queued", None
    session.commit()
    return evaluation


def expire_stuck_evaluations(*, session: Session, now: dt.datetime, timeout: dt.timedelta) -> list[Evaluation]:
    """Fail every running evaluation without a heartbeat for ``timeout``, naming the worker and the silence.

    These are the service's failures (``infrastructure_failure``), so they never count against the quota. Each is
    failed by a conditional update that rechecks it is still running and silent: a worker that finishes or beats
    meanwhile keeps its result.
    """
    expired = []
    for evaluation in list_stale_evaluations(session=session, now=now, timeout=timeout):
        last = evaluation.heartbeat_at.isoformat() if evaluation.heartbeat_at else "never"
        message = (
            f"no heartbeat from worker {evaluation.worker_id!r} since {last} "
            f"(timeout {timeout.total_seconds():.0f} s, attempt {evaluation.attempts})"
        )
        changed = session.execute(
            update(Evaluation)
            .where(
                Evaluation.id == evaluation.id,
                Evaluation.state == "running",
                Evaluation.heartbeat_at < now - timeout,
            )
            .values(
                state="failed",
                finished_at=now,
                error_category=INFRASTRUCTURE,
                error_message=message,
                public_error_message="the service lost its worker; this submission does not count against your quota",
                infrastructure_failure=True,
            )
        )
        if not changed.rowcount:  # type: ignore[attr-defined]
            continue
        if evaluation.kind == "initial":
            session.execute(
                update(Submission).where(Submission.id == evaluation.submission_id).values(counts_against_quota=False)
            )
        expired.append(evaluation)
    session.commit()
    for evaluation in expired:
        session.refresh(evaluation)
    return expired


def list_evaluations(*, session: Session, states: Sequence[str] = EVALUATION_STATES) -> list[Evaluation]:
    return list(session.scalars(select(Evaluation).where(Evaluation.state.in_(states)).order_by(Evaluation.id)))


# --------------------------------------------------------------------------------------- baselines and leaderboard


def upsert_baseline_result(
    *,
    session: Session,
    evalset_commitment: str,
    sim_version: str,
    baseline: str,
    score_public: dict[str, Any] | None,
    score_private: dict[str, Any] | None,
    per_scenario: dict[str, Any] | None = None,
    now: dt.datetime | None = None,
) -> BaselineResult:
    """Cache a baseline's scores on one evaluation set and simulator version (replacing an earlier row)."""
    row = session.scalar(
        select(BaselineResult).where(
            BaselineResult.evalset_commitment == evalset_commitment,
            BaselineResult.sim_version == sim_version,
            BaselineResult.baseline == baseline,
        )
    )
    if row is None:
        row = BaselineResult(evalset_commitment=evalset_commitment, sim_version=sim_version, baseline=baseline)
        session.add(row)
    row.score_public, row.score_private = score_public, score_private
    row.per_scenario = per_scenario or {}
    row.created_at = now or utcnow()
    session.commit()
    return row


def get_baseline_result(
    *, session: Session, evalset_commitment: str, sim_version: str, baseline: str
) -> BaselineResult | None:
    return session.scalar(
        select(BaselineResult).where(
            BaselineResult.evalset_commitment == evalset_commitment,
            BaselineResult.sim_version == sim_version,
            BaselineResult.baseline == baseline,
        )
    )


def list_baseline_results(*, session: Session, evalset_commitment: str) -> list[BaselineResult]:
    return list(
        session.scalars(
            select(BaselineResult)
            .where(BaselineResult.evalset_commitment == evalset_commitment)
            .order_by(BaselineResult.baseline, BaselineResult.created_at)
        )
    )


def get_leaderboard_state(*, session: Session) -> LeaderboardState:
    state = session.get(LeaderboardState, 1)
    if state is None:
        state = LeaderboardState(id=1, frozen=False, private_published=False)
        session.add(state)
        try:
            session.commit()
        except IntegrityError:  # another request created it first
            session.rollback()
            state = session.get(LeaderboardState, 1)
            assert state is not None
    return state


def set_leaderboard_frozen(
    *, session: Session, frozen: bool, snapshot: dict[str, Any] | None, actor: User, now: dt.datetime | None = None
) -> LeaderboardState:
    """Freeze (keeping ``snapshot``, the leaderboards as they are now) or unfreeze the public leaderboard."""
    state = get_leaderboard_state(session=session)
    state.frozen = frozen
    state.frozen_at = (now or utcnow()) if frozen else None
    state.snapshot = snapshot if frozen else None
    _log(session, actor, "freeze" if frozen else "unfreeze", "leaderboard", {})
    session.commit()
    return state


def publish_private(
    *, session: Session, actor: User, snapshot: dict[str, Any], now: dt.datetime | None = None
) -> LeaderboardState:
    """Publish the private leaderboard as ``snapshot`` (the final ranking as it stands now), which is what it shows
    from then on. Publication is once: publishing again keeps the first snapshot. It closes uploads and selection.
    """
    get_leaderboard_state(session=session)  # creates the row if needed
    # Locked so that two organisers publishing at once keep one snapshot, not the later of two.
    state = session.get(LeaderboardState, 1, with_for_update=True, populate_existing=True)
    assert state is not None
    if not state.private_published:
        state.private_published, state.published_at = True, now or utcnow()
        state.private_snapshot = snapshot
    _log(session, actor, "publish_private", "leaderboard", {})
    session.commit()
    return state


def leaderboard_submissions(*, session: Session) -> list[Submission]:
    """Every participant's submission that is not disqualified, with evaluations and owner loaded."""
    return list(
        session.scalars(
            select(Submission)
            .join(User, Submission.owner_id == User.id)
            .where(User.role == "participant", Submission.disqualified_reason.is_(None))
            .options(selectinload(Submission.evaluations), selectinload(Submission.owner))
            .order_by(Submission.id)
        )
    )


@dataclass(frozen=True)
class ScoredEntry:
    """A leaderboard candidate: a submission with the overall score of its newest succeeded non-audit evaluation."""

    submission_id: int
    owner_id: int
    owner_name: str
    name: str
    created_at: dt.datetime
    selected: bool
    selected_at: dt.datetime | None
    evaluation_id: int
    overall: float


def leaderboard_entries(*, session: Session, split: str, evalset_name: str | None) -> list[ScoredEntry]:
    """What :func:`leaderboard_submissions` + :func:`scored_evaluation` give, as plain columns in one query.

    Loading every submission with its evaluations as ORM objects took 1.4 s with 10,000 submissions, and decoding
    10,000 score documents still 200 ms: this reads only each scoring evaluation's ``overall`` (about 30 ms).
    Unscored evaluations (no ``overall``) are left out. :func:`evaluation_scores` fetches the winners' documents.
    """
    scoring = select(Evaluation.submission_id, func.max(Evaluation.id).label("evaluation_id")).where(
        Evaluation.kind != "audit", Evaluation.state == "succeeded"
    )
    if evalset_name is not None:
        scoring = scoring.where(Evaluation.evalset_name == evalset_name)
    latest = scoring.group_by(Evaluation.submission_id).subquery()
    score = Evaluation.score_public if split == "public" else Evaluation.score_private
    overall = score["overall"].as_float()
    rows = session.execute(
        select(
            Submission.id,
            Submission.owner_id,
            User.name,
            Submission.name,
            Submission.created_at,
            Submission.selected,
            Submission.selected_at,
            Evaluation.id,
            overall,
        )
        .join(User, Submission.owner_id == User.id)
        .join(latest, latest.c.submission_id == Submission.id)
        .join(Evaluation, Evaluation.id == latest.c.evaluation_id)
        .where(User.role == "participant", Submission.disqualified_reason.is_(None), overall.is_not(None))
        .order_by(Submission.id)
    )
    return [ScoredEntry(*row) for row in rows]


def evaluation_scores(*, session: Session, split: str, evaluation_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """The ``split`` score documents of these evaluations, by evaluation id."""
    score = Evaluation.score_public if split == "public" else Evaluation.score_private
    rows = session.execute(select(Evaluation.id, score).where(Evaluation.id.in_(list(evaluation_ids))))
    return {evaluation_id: document for evaluation_id, document in rows}


def leaderboard_fingerprint(*, session: Session) -> tuple[Any, ...]:
    """Aggregates that change whenever anything a live leaderboard shows changes (one query of index scans).

    An evaluation that succeeds moves the succeeded evaluations' count and id sum; disqualifying and new submissions
    move the submission aggregates (the per-participant submission counts are shown); a new current evaluation set,
    new baseline scores and new users move theirs. Freezing and publishing are read apart.

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
        [func.count(User.id), func.max(User.id)],
        [func.count(BaselineResult.id), func.max(BaselineResult.created_at)],
        [func.max(EvalSet.id).filter(EvalSet.current.is_(True))],
    ]
    # One scan per table (a subquery each, so no join multiplies rows), one round trip in all.
    first, *others = [select(*aggregates).subquery() for aggregates in per_table]
    joined: FromClause = first
    for other in others:
        joined = joined.join(other, true())  # one row each: the cross join is that one row
    return tuple(session.execute(select(joined)).one())


def count_submissions_by_owner(*, session: Session) -> dict[int, int]:
    rows = session.execute(select(Submission.owner_id, func.count(Submission.id)).group_by(Submission.owner_id))
    return {owner: count for owner, count in rows}


# -------------------------------------------------------------------------------------------------------- audit log


def _log(session: Session, actor: User | None, action: str, target: str, detail: dict[str, Any]) -> None:
    session.add(
        AuditLogEntry(
            actor_id=actor.id if actor else None,
            actor=actor.name if actor else "system",
            action=action,
            target=target,
            detail=detail,
        )
    )


def log_action(
    *, session: Session, actor: User | None, action: str, target: str, detail: dict[str, Any] | None = None
) -> AuditLogEntry:
    """Record an organiser action that no other storage function records (e.g. from the admin CLI)."""
    entry = AuditLogEntry(
        actor_id=actor.id if actor else None,
        actor=actor.name if actor else "system",
        action=action,
        target=target,
        detail=detail or {},
    )
    session.add(entry)
    session.commit()
    return entry


def list_audit_log(*, session: Session, offset: int = 0, limit: int = 50) -> tuple[list[AuditLogEntry], int]:
    total = session.scalar(select(func.count(AuditLogEntry.id))) or 0
    rows = session.scalars(select(AuditLogEntry).order_by(AuditLogEntry.id.desc()).offset(offset).limit(limit)).all()
    return list(rows), total
