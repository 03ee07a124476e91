"""Turning rows into the API's response bodies (the one place that knows both shapes).

What a row shows depends on who reads it: ``visibility.Audience``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, cast

from layersched.server import storage
from layersched.server.leaderboard import PublicView
from layersched.server.models import EpisodeResult, EvalSet, Evaluation, Phase, Submission, Team, User
from layersched.server.queue_places import QueuePlaces
from layersched.server.schemas import (
    AuditVerdict,
    EpisodeLog,
    EpisodePublic,
    ErrorInfo,
    EvalSetPublic,
    EvaluationDetail,
    EvaluationPublic,
    PhasePublic,
    Progress,
    ScenarioPublic,
    Score,
    State,
    SubmissionPublic,
    TeamPublic,
    Visibility,
)
from layersched.server.storage import is_open, phase_quota, phase_state
from layersched.server.tracks import track_fields
from layersched.server.visibility import Audience, audience, hidden_episode_message


def _score(raw: dict[str, Any] | None) -> Score | None:
    return Score.model_validate(raw) if raw and raw.get("overall") is not None else None


def _error(evaluation: Evaluation | None, reader: Audience) -> ErrorInfo | None:
    if evaluation is None or evaluation.state not in ("failed", "cancelled") or reader == "public":
        return None
    category = evaluation.error_category or "unknown"
    if reader == "organiser":
        message = evaluation.error_message or f"evaluation {evaluation.id} ended as {evaluation.state}"
    else:
        message = evaluation.public_error_message or (
            f"evaluation {evaluation.id} ended as {evaluation.state} ({category}); its details are shown to "
            "organisers only"
        )
    return ErrorInfo(category=category, message=message)


def _audit(evaluation: Evaluation, reader: Audience) -> AuditVerdict | None:
    if not evaluation.audit:
        return None
    verdict = evaluation.audit
    # An audit older than the participant's own list of lines shows them nothing but the verdict.
    lines = verdict.get("mismatches" if reader == "organiser" else "public_mismatches", [])
    return AuditVerdict(verdict=verdict["verdict"], mismatches=lines)


def _progress(evaluation: Evaluation, reader: Audience) -> Progress:
    """Organisers see every recorded episode; a participant, while the evaluation runs, only those whose workload is
    not hidden (how long each hidden episode took is the policy's to choose: it could spell out what it saw)."""
    done = evaluation.progress_done
    if reader != "organiser" and evaluation.state in ("queued", "running"):
        done = evaluation.public_progress_done
    return Progress(done=done, total=evaluation.progress_total)


def evaluation_public(evaluation: Evaluation, reader: Audience = "organiser") -> EvaluationPublic:
    return EvaluationPublic(**_evaluation_fields(evaluation, reader))


def _evaluation_fields(evaluation: Evaluation, reader: Audience = "organiser") -> dict[str, Any]:
    return {
        "id": evaluation.id,
        "kind": evaluation.kind,
        "state": evaluation.state,
        "evalset_name": evaluation.evalset_name,
        "evalset_commitment": evaluation.evalset_commitment,
        "sim_version": evaluation.sim_version,
        "image_digest": evaluation.image_digest,
        "bundle_sha256": evaluation.submission.bundle_sha256,
        "sandbox": evaluation.sandbox,
        "created_at": evaluation.created_at,
        "started_at": evaluation.started_at,
        "finished_at": evaluation.finished_at,
        "attempts": evaluation.attempts,
        "progress": _progress(evaluation, reader),
        "error": _error(evaluation, reader),
        "audit_of": evaluation.audit_of_id,
        "audit": _audit(evaluation, reader),
    }


def evaluation_detail(evaluation: Evaluation) -> EvaluationDetail:
    return EvaluationDetail(
        **_evaluation_fields(evaluation),
        submission_id=evaluation.submission_id,
        worker_id=evaluation.worker_id,
        heartbeat_at=evaluation.heartbeat_at,
        infrastructure_failure=evaluation.infrastructure_failure,
        score_public=_score(evaluation.score_public),
        score_private=_score(evaluation.score_private),
        episodes=[EpisodePublic.model_validate(e) for e in evaluation.episodes],
    )


def submission_public(
    submission: Submission, *, viewer: User | None, view: PublicView | None = None, queue: QueuePlaces | None = None
) -> SubmissionPublic:
    """The submission as ``viewer`` may read it (None: anyone, e.g. a ranked entry's public page: no errors).
    ``view`` (:func:`leaderboard.public_view` for the viewer) gives its rank and the public score the viewer may see,
    laddered for owners under the Ladder; without it (organisers' routes, a submission just created) the score is the
    raw public score and the rank is left out. ``queue`` gives a queued submission its place in the queue.
    """
    reader = audience(viewer, submission)
    primary = storage.primary_evaluation(submission)
    scored = storage.scored_evaluation(submission)
    raw = _score(scored.score_public) if scored else None
    score, revealed = view.public_score(submission.id, raw) if view is not None else (raw, None)
    return SubmissionPublic(
        phase=submission.phase.name,
        id=submission.id,
        name=submission.name,
        description=submission.description,
        owner=submission.owner.name,
        created_at=submission.created_at,
        bundle_sha256=submission.bundle_sha256,
        state=cast(State, primary.state) if primary else "queued",  # CHECK constraint guarantees the value
        disqualified=submission.disqualified_reason,
        progress=_progress(primary, reader) if primary else Progress(done=0, total=0),
        error=_error(primary, reader),
        score=score,
        rank=view.rank(submission.id) if view is not None else None,
        selected=submission.selected,
        evaluations=[evaluation_public(e, reader) for e in submission.evaluations],
        score_revealed=revealed,
        queue=queue.place(primary.id)
        if queue is not None and primary is not None and primary.state == "queued"
        else None,
    )


def team_public(team: Team, *, max_size: int) -> TeamPublic:
    return TeamPublic(
        name=team.name,
        members=[m.user.name for m in team.members],
        max_size=max_size,
        created_at=team.created_at,
        renamed_from=team.renamed_from,
    )


def phase_public(
    phase: Phase, *, default_quota: int, now: dt.datetime, submissions_today: int | None = None
) -> PhasePublic:
    return PhasePublic(
        name=phase.name,
        title=phase.title,
        evalset=phase.evalset.name,
        opens_at=phase.opens_at,
        closes_at=phase.closes_at,
        open=is_open(phase, now),
        state=phase_state(phase, now),
        daily_quota=phase_quota(phase, default_quota),
        visibility=cast(Visibility, phase.visibility),  # CHECK constraint guarantees the value
        submissions_today=submissions_today,
        **track_fields(phase.evalset.track),
    )


def evalset_public(evalset: EvalSet) -> EvalSetPublic:
    return EvalSetPublic(
        name=evalset.name,
        commitment=evalset.commitment,
        revealed=evalset.revealed,
        scenarios=[ScenarioPublic.model_validate(s) for s in evalset.scenarios],
        **track_fields(evalset.track),
    )


def episode_log(episode: EpisodeResult, reader: Audience) -> EpisodeLog:
    """Hidden episodes keep no output; to their owner they show status and step only (the message may quote what
    the policy wrote about the hidden workload: its traceback, the value it returned), whatever the status: the
    worker stores no message for one that ended ``ok`` today, but nothing here relies on that."""
    message = episode.message
    if episode.hidden and reader != "organiser":
        message = "" if episode.status == "ok" else hidden_episode_message(episode.status, episode.step)
    return EpisodeLog(
        scenario=episode.scenario,
        episode=episode.episode_id,
        hidden=episode.hidden,
        status=episode.status,
        step=episode.step,
        message=message,
        stdout=None if episode.hidden else episode.stdout,
        stderr=None if episode.hidden else episode.stderr,
    )


def submission_logs(submission: Submission, reader: Audience) -> list[EpisodeLog]:
    """The per-episode log of ``submission``'s primary evaluation as ``reader`` may read it: the API's logs body and
    the owner's page show exactly this."""
    evaluation = storage.primary_evaluation(submission)
    episodes = evaluation.episodes if evaluation else []
    running = evaluation is not None and evaluation.state in ("queued", "running")
    # While it runs, a participant sees no hidden episode's row: when each appeared would tell how long it took.
    shown = [e for e in episodes if reader == "organiser" or not (running and e.hidden)]
    return [episode_log(e, reader) for e in shown]
