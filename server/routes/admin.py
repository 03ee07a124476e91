from __future__ import annotations

from typing import Annotated, cast

from fastapi import APIRouter, Query, Response
from fastapi import Path as PathParam

from layersched.server import leaderboard, presenters, queue, storage
from layersched.server.deps import EnqueuerDep, Organiser, PageDep, RowId, SessionDep, SettingsDep
from layersched.server.models import NAME_LENGTH, LeaderboardState, Phase, utcnow
from layersched.server.routes.teams import team_limits
from layersched.server.schemas import (
    NO_NUL,
    AuditLogList,
    AuditLogPublic,
    AuditRequest,
    DisqualifyRequest,
    EvalSetPublic,
    EvaluationDetail,
    EvaluationPublic,
    FreezeRequest,
    LeaderboardStatePublic,
    PhaseClose,
    PhaseCreate,
    PhaseEdit,
    PhasePublic,
    RerunRequest,
    RevealRequest,
    SubmissionPublic,
    TeamAssign,
    TeamCreate,
    TeamPublic,
    TokenCreated,
    UserCreate,
    UserCreated,
    UserPublic,
)

router = APIRouter(prefix="/admin", tags=["organisers"])


@router.post("/users", status_code=201, response_model=UserCreated)
def create_user(session: SessionDep, actor: Organiser, body: UserCreate) -> UserCreated:
    user = storage.create_user(session=session, name=body.name, email=body.email, role=body.role, actor=actor)
    _token, plain = storage.issue_token(session=session, user_id=user.id, actor=actor)
    return UserCreated(user=UserPublic.model_validate(user), token=plain)


@router.post("/users/{user_id}/tokens", status_code=201, response_model=TokenCreated)
def create_token(session: SessionDep, actor: Organiser, user_id: RowId) -> TokenCreated:
    token, plain = storage.issue_token(session=session, user_id=user_id, actor=actor)
    return TokenCreated(id=token.id, token=plain)


@router.delete("/tokens/{token_id}", status_code=204, response_class=Response)
def revoke_token(session: SessionDep, actor: Organiser, token_id: RowId) -> Response:
    storage.revoke_token(session=session, token_id=token_id, actor=actor)
    return Response(status_code=204)


@router.post("/submissions/{submission_id}/rerun", status_code=202, response_model=EvaluationPublic)
def rerun(
    session: SessionDep, actor: Organiser, enqueuer: EnqueuerDep, submission_id: RowId, body: RerunRequest | None = None
) -> EvaluationPublic:
    evaluation = storage.create_rerun(
        session=session, submission_id=submission_id, evalset_name=body.evalset if body else None, actor=actor
    )
    queue.enqueue(enqueuer, evaluation)
    return presenters.evaluation_public(evaluation)


@router.post("/submissions/{submission_id}/audit", status_code=202, response_model=EvaluationPublic)
def audit(
    session: SessionDep, actor: Organiser, enqueuer: EnqueuerDep, submission_id: RowId, body: AuditRequest | None = None
) -> EvaluationPublic:
    evaluation = storage.create_audit(
        session=session, submission_id=submission_id, sample=body.sample if body else None, actor=actor
    )
    queue.enqueue(enqueuer, evaluation)
    return presenters.evaluation_public(evaluation)


@router.post("/submissions/{submission_id}/cancel", response_model=SubmissionPublic)
def cancel(session: SessionDep, actor: Organiser, submission_id: RowId) -> SubmissionPublic:
    return presenters.submission_public(
        storage.cancel_submission(session=session, submission_id=submission_id, actor=actor), viewer=actor
    )


@router.post("/submissions/{submission_id}/disqualify", response_model=SubmissionPublic)
def disqualify(
    session: SessionDep, actor: Organiser, submission_id: RowId, body: DisqualifyRequest
) -> SubmissionPublic:
    return presenters.submission_public(
        storage.disqualify_submission(session=session, submission_id=submission_id, reason=body.reason, actor=actor),
        viewer=actor,
    )


PhaseName = Annotated[str, PathParam(max_length=50, pattern=NO_NUL)]
# Which phase's board: default, as for GET /leaderboard, the only open phase (or the only phase there is).
BoardPhase = Annotated[str | None, Query(max_length=50, pattern=NO_NUL, description="default: the open phase")]


def _state_public(phase: Phase, state: LeaderboardState) -> LeaderboardStatePublic:
    return LeaderboardStatePublic(
        phase=phase.name,
        frozen=state.frozen,
        frozen_at=state.frozen_at,
        published=state.private_published,
        published_at=state.published_at,
    )


@router.post("/leaderboard/freeze", response_model=LeaderboardStatePublic)
def freeze(
    session: SessionDep, actor: Organiser, body: FreezeRequest, phase: BoardPhase = None
) -> LeaderboardStatePublic:
    target = storage.resolve_phase(session=session, name=phase)
    snapshot = leaderboard.freeze_snapshot(session=session, phase=target) if body.frozen else None
    state = storage.set_leaderboard_frozen(
        session=session, phase=target, frozen=body.frozen, snapshot=snapshot, actor=actor
    )
    return _state_public(target, state)


@router.post("/leaderboard/publish", response_model=LeaderboardStatePublic)
def publish(session: SessionDep, actor: Organiser, phase: BoardPhase = None) -> LeaderboardStatePublic:
    target = storage.resolve_phase(session=session, name=phase)
    snapshot = leaderboard.final_snapshot(session=session, phase=target)
    return _state_public(target, storage.publish_private(session=session, phase=target, actor=actor, snapshot=snapshot))


@router.post("/phases", status_code=201, response_model=PhasePublic)
def create_phase(session: SessionDep, actor: Organiser, settings: SettingsDep, body: PhaseCreate) -> PhasePublic:
    phase = storage.create_phase(
        session=session,
        name=body.name,
        title=body.title or body.name,
        evalset_name=body.evalset,
        opens_at=body.opens_at,
        closes_at=body.closes_at,
        daily_quota=body.daily_quota,
        visibility=body.visibility,
        actor=actor,
    )
    return presenters.phase_public(phase, default_quota=settings.daily_quota, now=utcnow())


@router.patch("/phases/{name}", response_model=PhasePublic)
def edit_phase(
    session: SessionDep, actor: Organiser, settings: SettingsDep, name: PhaseName, body: PhaseEdit
) -> PhasePublic:
    """Change what the body names. ``null`` means open-ended for ``closes_at`` and the server's quota for
    ``daily_quota``; ``title``, ``opens_at`` and ``visibility`` cannot be null."""
    changes = cast(storage.PhaseChanges, body.changes())
    phase = storage.edit_phase(session=session, name=name, changes=changes, actor=actor)
    return presenters.phase_public(phase, default_quota=settings.daily_quota, now=utcnow())


@router.post("/phases/{name}/open", response_model=PhasePublic)
def open_phase(session: SessionDep, actor: Organiser, settings: SettingsDep, name: PhaseName) -> PhasePublic:
    phase = storage.open_phase(session=session, name=name, actor=actor)
    return presenters.phase_public(phase, default_quota=settings.daily_quota, now=utcnow())


@router.post("/phases/{name}/close", response_model=PhasePublic)
def close_phase(
    session: SessionDep, actor: Organiser, settings: SettingsDep, name: PhaseName, body: PhaseClose | None = None
) -> PhasePublic:
    phase = storage.close_phase(session=session, name=name, actor=actor, at=body.at if body else None)
    return presenters.phase_public(phase, default_quota=settings.daily_quota, now=utcnow())


TeamName = Annotated[str, PathParam(min_length=1, max_length=NAME_LENGTH, pattern=NO_NUL)]
UserName = Annotated[str, PathParam(min_length=1, max_length=NAME_LENGTH, pattern=NO_NUL)]


@router.post("/teams", status_code=201, response_model=TeamPublic)
def create_team(session: SessionDep, actor: Organiser, settings: SettingsDep, body: TeamCreate) -> TeamPublic:
    """An empty team, for assigning participants to (organisers ignore the team merger deadline)."""
    team = storage.create_team(session=session, name=body.name, founder=None, actor=actor, deadline=None, now=utcnow())
    return presenters.team_public(team, max_size=settings.team_max_size)


@router.post("/teams/{name}/members", response_model=TeamPublic)
def assign_member(
    session: SessionDep, actor: Organiser, settings: SettingsDep, name: TeamName, body: TeamAssign
) -> TeamPublic:
    user = storage.get_user_by_name(session=session, name=body.user)
    team = storage.assign_member(
        session=session,
        team_name=name,
        user=user,
        actor=actor,
        max_size=settings.team_max_size,
        limits=team_limits(settings),
        now=utcnow(),
    )
    return presenters.team_public(team, max_size=settings.team_max_size)


@router.delete("/teams/{name}/members/{user}", response_model=TeamPublic)
def remove_member(
    session: SessionDep, actor: Organiser, settings: SettingsDep, name: TeamName, user: UserName
) -> TeamPublic:
    member = storage.get_user_by_name(session=session, name=user)
    team = storage.remove_member(session=session, team_name=name, user=member, actor=actor, now=utcnow())
    return presenters.team_public(team, max_size=settings.team_max_size)


@router.post("/evalsets/{name}/reveal", response_model=EvalSetPublic)
def reveal(
    session: SessionDep,
    actor: Organiser,
    name: Annotated[str, PathParam(pattern=NO_NUL)],
    body: RevealRequest | None = None,
) -> EvalSetPublic:
    """Refused (409) while a phase on the set is open and unpublished, unless ``force``."""
    force = body.force if body else False
    return presenters.evalset_public(storage.reveal_evalset(session=session, name=name, actor=actor, force=force))


@router.get("/audit-log", response_model=AuditLogList)
def read_audit_log(session: SessionDep, _actor: Organiser, page: PageDep) -> AuditLogList:
    rows, count = storage.list_audit_log(session=session, offset=page.offset, limit=page.limit)
    return AuditLogList(data=[AuditLogPublic.model_validate(r) for r in rows], count=count)


@router.get("/evaluations/{evaluation_id}", response_model=EvaluationDetail)
def read_evaluation(session: SessionDep, _actor: Organiser, evaluation_id: RowId) -> EvaluationDetail:
    return presenters.evaluation_detail(storage.get_evaluation(session=session, evaluation_id=evaluation_id))
