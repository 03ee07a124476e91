"""What the organisers' exports read: a phase's submissions with their scores and provenance, every episode of
them, and the bundles of the final selection. Each is a generator over plain columns fetched in batches
(``yield_per``: a server-side cursor on PostgreSQL), so an export of 10,000 submissions holds one batch in memory,
never the whole phase."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session, aliased

from layersched.server.models import EpisodeResult, Evaluation, Phase, Submission, Team, TeamMember, User
from layersched.server.storage.submission_views import primary_evaluations

BATCH = 500


@dataclass(frozen=True)
class ExportedSubmission:
    id: int
    name: str
    owner: str
    email: str
    team: str | None
    created_at: dt.datetime
    disqualified: str | None
    selected: bool
    bundle_sha256: str
    state: str
    category: str | None
    service_failure: bool
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    scored_evaluation: int | None  # the newest succeeded evaluation on the phase's set: it gives the scores below
    public: float | None
    public_low: float | None
    public_high: float | None
    private: float | None
    private_low: float | None
    private_high: float | None
    commitment: str | None
    sim_version: str | None
    image_digest: str | None


def _scored_evaluations(phase: Phase) -> Any:
    return (
        select(Evaluation.submission_id, func.max(Evaluation.id).label("evaluation_id"))
        .where(
            Evaluation.kind != "audit",
            Evaluation.state == "succeeded",
            Evaluation.evalset_name == phase.evalset.name,
        )
        .group_by(Evaluation.submission_id)
        .subquery()
    )


def _team_now() -> Any:
    return and_(TeamMember.user_id == User.id, TeamMember.left_at.is_(None))


def exported_submissions(*, session: Session, phase: Phase) -> Iterator[ExportedSubmission]:
    """Every submission to ``phase``, oldest first, with its primary evaluation's state and its scored evaluation's
    scores (both splits, with their intervals) and provenance."""
    primary = primary_evaluations().subquery()
    scored = _scored_evaluations(phase)
    current = aliased(Evaluation)
    scoring = aliased(Evaluation)
    public, private = scoring.score_public, scoring.score_private
    query = (
        select(
            Submission.id,
            Submission.name,
            User.name,
            User.email,
            Team.name,
            Submission.created_at,
            Submission.disqualified_reason,
            Submission.selected,
            Submission.bundle_sha256,
            current.state,
            current.error_category,
            current.infrastructure_failure,
            current.started_at,
            current.finished_at,
            scoring.id,
            public["overall"].as_float(),
            public["ci_low"].as_float(),
            public["ci_high"].as_float(),
            private["overall"].as_float(),
            private["ci_low"].as_float(),
            private["ci_high"].as_float(),
            scoring.evalset_commitment,
            scoring.sim_version,
            scoring.image_digest,
        )
        .join(User, User.id == Submission.owner_id)
        .join(primary, primary.c.submission_id == Submission.id)
        .join(current, current.id == primary.c.evaluation_id)
        .outerjoin(scored, scored.c.submission_id == Submission.id)
        .outerjoin(scoring, scoring.id == scored.c.evaluation_id)
        .outerjoin(TeamMember, _team_now())
        .outerjoin(Team, Team.id == TeamMember.team_id)
        .where(Submission.phase_id == phase.id)
        .order_by(Submission.id)
        .execution_options(yield_per=BATCH)
    )
    for row in session.execute(query):
        yield ExportedSubmission(*tuple(row))


@dataclass(frozen=True)
class ExportedEpisode:
    submission_id: int
    owner: str
    team: str | None
    evaluation_id: int
    kind: str
    scenario: str
    episode: str
    split: str
    hidden: bool
    status: str
    step: int | None
    message: str
    metrics: dict[str, float] | None
    primary_value: float | None
    trace_hash: str | None
    n_actions: int


def exported_episodes(*, session: Session, phase: Phase) -> Iterator[ExportedEpisode]:
    """Every episode of the primary evaluation of every submission to ``phase`` (hidden ones too: organisers read
    them), by submission, scenario and episode."""
    primary = primary_evaluations().subquery()
    query = (
        select(
            Submission.id,
            User.name,
            Team.name,
            Evaluation.id,
            Evaluation.kind,
            EpisodeResult.scenario,
            EpisodeResult.episode_id,
            EpisodeResult.split,
            EpisodeResult.hidden,
            EpisodeResult.status,
            EpisodeResult.step,
            EpisodeResult.message,
            EpisodeResult.metrics,
            EpisodeResult.primary_value,
            EpisodeResult.trace_hash,
            EpisodeResult.n_actions,
        )
        .join(User, User.id == Submission.owner_id)
        .join(primary, primary.c.submission_id == Submission.id)
        .join(Evaluation, Evaluation.id == primary.c.evaluation_id)
        .join(EpisodeResult, EpisodeResult.evaluation_id == Evaluation.id)
        .outerjoin(TeamMember, _team_now())
        .outerjoin(Team, Team.id == TeamMember.team_id)
        .where(Submission.phase_id == phase.id)
        .order_by(Submission.id, EpisodeResult.scenario, EpisodeResult.episode_id)
        .execution_options(yield_per=BATCH)
    )
    for row in session.execute(query):
        yield ExportedEpisode(*tuple(row))


@dataclass(frozen=True)
class SelectedBundle:
    submission_id: int
    owner: str
    team: str | None
    name: str
    bundle_sha256: str
    bundle_format: str
    selected: bool  # False: the competitor selected none, and the final ranking took this one


def selected_bundles(*, session: Session, phase: Phase, also: list[int]) -> list[SelectedBundle]:
    """The submissions of ``phase`` selected for its final ranking, and those of ``also`` (the ones the final ranking
    took for competitors who selected none), by id. At most a few per competitor: a list."""
    query = (
        select(
            Submission.id,
            User.name,
            Team.name,
            Submission.name,
            Submission.bundle_sha256,
            Submission.bundle_format,
            Submission.selected,
        )
        .join(User, User.id == Submission.owner_id)
        .outerjoin(TeamMember, _team_now())
        .outerjoin(Team, Team.id == TeamMember.team_id)
        .where(Submission.phase_id == phase.id, Submission.selected.is_(True) | Submission.id.in_(also))
        .order_by(Submission.id)
    )
    return [SelectedBundle(*row) for row in session.execute(query)]


@dataclass(frozen=True)
class Entrant:
    """A participant, with their team now (None: alone) and whether they are disabled."""

    name: str
    email: str
    team: str | None
    disabled: bool


def entrants(*, session: Session) -> list[Entrant]:
    """Every participant, in the order they joined their team (or were created): the board export's rows are the
    competitors they make up."""
    query = (
        select(User.name, User.email, Team.name, User.disabled_at.is_not(None))
        .outerjoin(TeamMember, _team_now())
        .outerjoin(Team, Team.id == TeamMember.team_id)
        .where(User.role == "participant")
        .order_by(func.coalesce(TeamMember.id, 0), User.id)
    )
    return [Entrant(*row) for row in session.execute(query)]
