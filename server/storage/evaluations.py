"""Evaluations: the queued row, the worker's claim on it, its episode results and its end.

The worker's calls (``start_evaluation``, ``heartbeat``, ``record_episode_result``, ``finish_evaluation``) are
idempotent: a task that is delivered twice, or resumes after its worker died, writes the same rows again instead
of new ones. The reconciler finds the evaluations whose worker went silent (``list_stale_evaluations``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from layersched.server.errors import NotFound
from layersched.server.models import (
    EVALUATION_STATES,
    TERMINAL_STATES,
    EpisodeResult,
    EvalSet,
    Evaluation,
    Submission,
    User,
    utcnow,
)
from layersched.server.storage.replays import ReplayInput, write_episode_actions
from layersched.server.storage.webhooks import record_evaluation_end

INFRASTRUCTURE = "infrastructure"


def get_evaluation(*, session: Session, evaluation_id: int) -> Evaluation:
    evaluation = session.get(Evaluation, evaluation_id)
    if evaluation is None:
        raise NotFound(f"evaluation {evaluation_id} does not exist")
    return evaluation


def new_evaluation(
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
    """A queued evaluation of ``submission``, flushed but not committed: the caller's action commits it."""
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
    metrics: dict[str, float] | None = None,
    primary_value: float | None = None,
    trace_hash: str | None = None,
    n_actions: int = 0,
    stdout: str | None = None,
    stderr: str | None = None,
    now: dt.datetime | None = None,
    replay: ReplayInput | None = None,
) -> EpisodeResult:
    """Write one episode's outcome (an upsert on (evaluation, scenario, episode)) and update the progress.

    ``hidden`` episodes (keyed workloads) drop stdout and stderr here, whatever the worker passes; their
    ``message`` is kept for organisers (participants see ``status`` and ``step`` only: ``presenters``). ``replay``
    (an episode with a public workload: its accepted actions) is kept in the same transaction, never a hidden one's.
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
        "metrics": metrics,
        "primary_value": primary_value,
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
    row_id = session.scalar(
        select(EpisodeResult.id).where(
            EpisodeResult.evaluation_id == evaluation_id,
            EpisodeResult.scenario == scenario,
            EpisodeResult.episode_id == episode_id,
        )
    )
    assert row_id is not None
    if replay is not None:
        write_episode_actions(session=session, episode_result_id=row_id, hidden=hidden, replay=replay)
    evaluation.progress_done = _count_episodes(session, evaluation_id)
    evaluation.public_progress_done = _count_episodes(session, evaluation_id, hidden=False)
    session.commit()
    row = session.get(EpisodeResult, row_id)
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
    ended = now or utcnow()
    evaluation.state = state
    evaluation.finished_at = ended
    evaluation.score_public, evaluation.score_private, evaluation.audit = score_public, score_private, audit
    evaluation.error_category, evaluation.error_message = error_category, error_message
    evaluation.public_error_message = public_error_message
    evaluation.infrastructure_failure = infrastructure_failure
    evaluation.progress_done = _count_episodes(session, evaluation_id)
    evaluation.public_progress_done = _count_episodes(session, evaluation_id, hidden=False)
    if state == "failed" and infrastructure_failure and evaluation.kind == "initial":
        evaluation.submission.counts_against_quota = False
    record_evaluation_end(session, evaluation, ended)  # the webhooks' outbox: no request is made here
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
    for evaluation in expired:
        session.refresh(evaluation)
        record_evaluation_end(session, evaluation, now)
    session.commit()
    return expired


def list_evaluations(*, session: Session, states: Sequence[str] = EVALUATION_STATES) -> list[Evaluation]:
    return list(session.scalars(select(Evaluation).where(Evaluation.state.in_(states)).order_by(Evaluation.id)))
