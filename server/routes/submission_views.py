"""``GET /admin/submissions``: the organisers' filtered view of every submission, with the failures by category."""

from __future__ import annotations

import datetime as dt
from typing import cast

from fastapi import APIRouter
from sqlalchemy.orm import Session

from layersched.server.deps import Organiser, PageDep, SessionDep
from layersched.server.models import utcnow
from layersched.server.organiser_schemas import SubmissionRowPublic, SubmissionRows, SubmissionsSummary
from layersched.server.routes.filters import FilterDep
from layersched.server.schemas import State
from layersched.server.storage.submission_views import (
    SubmissionFilter,
    SubmissionRow,
    list_submission_rows,
    summarise,
)

router = APIRouter(prefix="/admin", tags=["organisers"])


def row_public(row: SubmissionRow, now: dt.datetime) -> SubmissionRowPublic:
    return SubmissionRowPublic(
        id=row.id,
        name=row.name,
        owner=row.owner,
        team=row.team,
        phase=row.phase,
        state=cast(State, row.state),  # the CHECK constraint guarantees the value
        category=row.category,
        service_failure=row.infrastructure_failure,
        disqualified=row.disqualified,
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        wait_s=row.wait_s(now),
        run_s=row.run_s(now),
        score=row.score,
    )


def submission_rows(session: Session, chosen: SubmissionFilter, offset: int, limit: int) -> SubmissionRows:
    """The page and its summary, as the API and the organisers' page show them."""
    now = utcnow()
    summary = summarise(session=session, chosen=chosen)  # first: an unknown name is refused before the page is read
    rows = list_submission_rows(session=session, chosen=chosen, offset=offset, limit=limit)
    return SubmissionRows(
        data=[row_public(r, now) for r in rows],
        count=summary.matching,
        summary=SubmissionsSummary(states=summary.states, failures=summary.failures),
    )


@router.get("/submissions", response_model=SubmissionRows)
def read_submissions(session: SessionDep, _actor: Organiser, chosen: FilterDep, page: PageDep) -> SubmissionRows:
    """Submissions newest first, filtered (an unknown phase, owner or team is 404 naming it), with phase, team, state,
    failure category, queue wait and run time, and the counts by state and by failure category."""
    return submission_rows(session, chosen, page.offset, page.limit)
