"""The HTML pages: the leaderboard (with its chart and per-scenario view), a participant's submissions and a
submission page with its per-episode log. No JavaScript.

Who reads what is the API's rule (``visibility``): owners and organisers see a submission whole, anyone sees one that
is on the public leaderboard as the board shows it. A page never says "does not exist" of a submission the reader may
not see: an anonymous reader gets the sign-in page (401), a signed-in participant "not one of yours" (403), whether
or not the id exists, so the pages reveal no more ids than the API does. Only organisers, who see everything, read
"does not exist".
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from layersched.server import charts, leaderboard, presenters, storage, visibility
from layersched.server.deps import PageDep, RowId, SessionDep, SettingsDep
from layersched.server.errors import Forbidden, NotFound
from layersched.server.models import Submission, User
from layersched.server.routes.page_auth import PageViewer
from layersched.server.routes.page_render import message, render
from layersched.server.routes.signin import signin_page
from layersched.server.schemas import Leaderboard, Score
from layersched.server.tracks import track_fields

router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse)
def leaderboard_page(
    request: Request,
    session: SessionDep,
    viewer: PageViewer,
    settings: SettingsDep,
    split: Literal["public", "private"] = "public",
) -> HTMLResponse:
    try:
        board = leaderboard.visible_leaderboard(session=session, split=split, viewer=viewer)
    except Forbidden as exc:
        return message(request, "Private leaderboard", exc.message, viewer=viewer, status_code=403)
    scenarios = sorted({name for row in board.rows for name in row.per_scenario})
    evalset = storage.get_current_evalset(session=session)
    deadline = settings.submission_deadline
    return render(
        request,
        "leaderboard.html",
        {
            "board": board,
            "scenarios": scenarios,
            "chart": charts.score_chart(board.rows, reference=board.reference_baseline),
            "evalset": evalset,
            "state": storage.get_leaderboard_state(session=session),
            "deadline": deadline.astimezone(dt.timezone.utc) if deadline else None,
            "final_submissions": settings.final_submissions,
        },
        viewer=viewer,
    )


@router.get("/submissions", response_class=HTMLResponse)
def submissions_page(request: Request, session: SessionDep, viewer: PageViewer, page: PageDep) -> HTMLResponse:
    """The reader's own submissions, newest first (an organiser's: everyone's), each linked to its page."""
    if viewer is None:
        return signin_page(request, next_url="/submissions", note="Sign in to see your submissions.", status_code=401)
    rows, count = storage.list_submissions(session=session, viewer=viewer, offset=page.offset, limit=page.limit)
    view = leaderboard.public_view(session=session, viewer=viewer)
    context = {
        "submissions": [presenters.submission_public(s, viewer=viewer, view=view) for s in rows],
        "count": count,
        "offset": page.offset,
        "limit": page.limit,
    }
    return render(request, "submissions.html", context, viewer=viewer)


def _not_shown(request: Request, viewer: User | None, submission_id: int) -> HTMLResponse:
    if viewer is None:
        note = (
            f"Submission {submission_id} is shown to its owner and the organisers only (it is not on the public "
            "leaderboard). If it is yours, sign in with your token."
        )
        return signin_page(request, next_url=f"/submissions/{submission_id}", note=note, status_code=401)
    if viewer.role == "organiser":
        return message(
            request, "Not found", f"submission {submission_id} does not exist", viewer=viewer, status_code=404
        )
    text = (
        f"submission {submission_id} is not one of yours (signed in as {viewer.name}): only its owner and the "
        "organisers see it"
    )
    return message(request, "Not yours", text, viewer=viewer, status_code=403)


def _score_reference(session: Session, submission: Submission, board: Leaderboard) -> str:
    """The reference baseline of the set whose evaluation gives the owner's score (an organiser's rerun may be on
    another set than the board's); the board's when that set is not registered any more or nothing is scored."""
    scored = storage.scored_evaluation(submission)
    if scored is None:
        return board.reference_baseline
    try:
        evalset = storage.get_evalset(session=session, name=scored.evalset_name)
    except NotFound:
        return board.reference_baseline
    return track_fields(evalset.track)["reference_baseline"]


@router.get("/submissions/{submission_id}", response_class=HTMLResponse)
def submission_page(request: Request, session: SessionDep, viewer: PageViewer, submission_id: RowId) -> HTMLResponse:
    """Owners and organisers see everything, with the per-episode log; anyone sees a submission on the leaderboard."""
    view = leaderboard.public_view(session=session, viewer=viewer)
    try:
        submission = storage.get_submission(session=session, submission_id=submission_id, viewer=viewer)
        full = True
    except NotFound:
        if view.rank(submission_id) is None:
            return _not_shown(request, viewer, submission_id)
        submission = storage.load_submission(session=session, submission_id=submission_id)
        full = False
    public = presenters.submission_public(submission, viewer=viewer, view=view)
    row = next((r for r in view.board.rows if r.submission_id == submission_id), None)
    if not full and row is not None:
        # A ranked entry is public already: show what its leaderboard row carries (its score there, the frozen one
        # while frozen), nothing more. A disqualification's reason, the state and progress of a later evaluation (an
        # organiser's rerun), errors and evaluations are for the owner and organisers (the template shows none).
        score = Score(overall=row.score, ci_low=row.ci_low, ci_high=row.ci_high, per_scenario=row.per_scenario)
        hide: dict[str, object] = {
            "disqualified": None,
            "error": None,
            "evaluations": [],
            "description": "",
            "score_revealed": None,
        }
        public = public.model_copy(update={**hide, "score": score, "created_at": row.submitted_at})
    reader = visibility.audience(viewer, submission)
    board = view.board
    return render(
        request,
        "submission.html",
        {
            "submission": public,
            "full": full,
            "row": row,
            "reference": board.reference_baseline if not full else _score_reference(session, submission, board),
            "chart": charts.score_chart([row], reference=board.reference_baseline) if row else "",
            "logs": presenters.submission_logs(submission, reader) if full else [],
        },
        viewer=viewer,
    )
