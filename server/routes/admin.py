from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Response
from fastapi import Path as PathParam

from layersched.server import leaderboard, presenters, queue, storage
from layersched.server.deps import EnqueuerDep, Organiser, PageDep, RowId, SessionDep
from layersched.server.models import LeaderboardState
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
    RerunRequest,
    SubmissionPublic,
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


def _state_public(state: LeaderboardState) -> LeaderboardStatePublic:
    return LeaderboardStatePublic(
        frozen=state.frozen,
        frozen_at=state.frozen_at,
        published=state.private_published,
        published_at=state.published_at,
    )


@router.post("/leaderboard/freeze", response_model=LeaderboardStatePublic)
def freeze(session: SessionDep, actor: Organiser, body: FreezeRequest) -> LeaderboardStatePublic:
    snapshot = leaderboard.freeze_snapshot(session=session) if body.frozen else None
    state = storage.set_leaderboard_frozen(session=session, frozen=body.frozen, snapshot=snapshot, actor=actor)
    return _state_public(state)


@router.post("/leaderboard/publish", response_model=LeaderboardStatePublic)
def publish(session: SessionDep, actor: Organiser) -> LeaderboardStatePublic:
    snapshot = leaderboard.final_snapshot(session=session)
    return _state_public(storage.publish_private(session=session, actor=actor, snapshot=snapshot))


@router.post("/evalsets/{name}/reveal", response_model=EvalSetPublic)
def reveal(session: SessionDep, actor: Organiser, name: Annotated[str, PathParam(pattern=NO_NUL)]) -> EvalSetPublic:
    return presenters.evalset_public(storage.reveal_evalset(session=session, name=name, actor=actor))


@router.get("/audit-log", response_model=AuditLogList)
def read_audit_log(session: SessionDep, _actor: Organiser, page: PageDep) -> AuditLogList:
    rows, count = storage.list_audit_log(session=session, offset=page.offset, limit=page.limit)
    return AuditLogList(data=[AuditLogPublic.model_validate(r) for r in rows], count=count)


@router.get("/evaluations/{evaluation_id}", response_model=EvaluationDetail)
def read_evaluation(session: SessionDep, _actor: Organiser, evaluation_id: RowId) -> EvaluationDetail:
    return presenters.evaluation_detail(storage.get_evaluation(session=session, evaluation_id=evaluation_id))
