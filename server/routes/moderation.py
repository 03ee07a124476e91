"""Bulk moderation (``POST /admin/bulk/rerun``, ``/admin/bulk/disqualify``): several submissions at once, by id or by
the organisers' view's filter, with a dry run that lists what would be touched and touches nothing."""

from __future__ import annotations

from fastapi import APIRouter
from sqlalchemy.orm import Session

from layersched.server import queue
from layersched.server.deps import EnqueuerDep, Organiser, SessionDep
from layersched.server.models import utcnow
from layersched.server.organiser_schemas import BulkChoice, BulkDisqualify, BulkRerun, BulkResult, Skipped
from layersched.server.routes.submission_views import row_public
from layersched.server.storage.moderation import bulk_disqualify, bulk_rerun, bulk_targets
from layersched.server.storage.submission_views import SubmissionFilter, list_submission_rows

router = APIRouter(prefix="/admin/bulk", tags=["organisers"])


def _chosen(session: Session, body: BulkChoice) -> tuple[list[int], BulkResult]:
    """The ids the action is for and the result listing them as they are now (what a dry run answers)."""
    ids = bulk_targets(session=session, ids=body.ids, chosen=body.filter.chosen() if body.filter else None)
    now = utcnow()
    rows = list_submission_rows(
        session=session, chosen=SubmissionFilter(ids=tuple(ids)), offset=0, limit=max(len(ids), 1)
    )
    listed = sorted((row_public(r, now) for r in rows), key=lambda r: r.id)
    return ids, BulkResult(dry_run=body.dry_run, count=len(ids), submissions=listed, evaluations=[], skipped=[])


@router.post("/rerun", response_model=BulkResult)
def rerun_many(session: SessionDep, actor: Organiser, enqueuer: EnqueuerDep, body: BulkRerun) -> BulkResult:
    """Queue a rerun of each chosen submission (on its phase's set, or ``evalset``), skipping any with an evaluation
    queued or running already; e.g. ``{"filter": {"state": "failed", "category": "infrastructure_error"}}``."""
    ids, result = _chosen(session, body)
    if body.dry_run:
        return result
    evaluations, skipped = bulk_rerun(session=session, ids=ids, evalset_name=body.evalset, actor=actor)
    for evaluation in evaluations:
        queue.enqueue(enqueuer, evaluation)
    result.evaluations = [e.id for e in evaluations]
    result.skipped = [Skipped(id=i, why=why) for i, why in skipped]
    return result


@router.post("/disqualify", response_model=BulkResult)
def disqualify_many(session: SessionDep, actor: Organiser, body: BulkDisqualify) -> BulkResult:
    """Disqualify each chosen submission with ``reason`` (one audit entry each)."""
    ids, result = _chosen(session, body)
    if not body.dry_run:
        bulk_disqualify(session=session, ids=ids, reason=body.reason, actor=actor)
    return result
