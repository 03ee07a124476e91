"""The HTML pages: the leaderboard (with its chart and per-scenario view) and a submission page. No JavaScript."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from layersched.server import charts, leaderboard, presenters, storage
from layersched.server.deps import OptionalUser, RowId, SessionDep, SettingsDep
from layersched.server.errors import Forbidden, NotFound
from layersched.server.schemas import Score

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=Path(__file__).resolve().parent.parent / "templates")
templates.env.filters["ratio_color"] = charts.ratio_color


@router.get("/", response_class=HTMLResponse)
def leaderboard_page(
    request: Request,
    session: SessionDep,
    user: OptionalUser,
    settings: SettingsDep,
    split: Literal["public", "private"] = "public",
) -> HTMLResponse:
    try:
        board = leaderboard.visible_leaderboard(session=session, split=split, viewer=user)
    except Forbidden as exc:
        return templates.TemplateResponse(
            request, "message.html", {"title": "Private leaderboard", "message": exc.message}, status_code=403
        )
    scenarios = sorted({name for row in board.rows for name in row.per_scenario})
    evalset = storage.get_current_evalset(session=session)
    deadline = settings.submission_deadline
    return templates.TemplateResponse(
        request,
        "leaderboard.html",
        {
            "board": board,
            "scenarios": scenarios,
            "chart": charts.score_chart(board.rows),
            "evalset": evalset,
            "state": storage.get_leaderboard_state(session=session),
            "deadline": deadline.astimezone(dt.timezone.utc) if deadline else None,
            "final_submissions": settings.final_submissions,
        },
    )


@router.get("/submissions/{submission_id}", response_class=HTMLResponse)
def submission_page(request: Request, session: SessionDep, user: OptionalUser, submission_id: RowId) -> HTMLResponse:
    """Owners and organisers (with a token) see everything; anyone sees a submission that is on the leaderboard."""
    view = leaderboard.public_view(session=session, viewer=user)
    rank = view.rank(submission_id)
    try:
        submission = storage.get_submission(session=session, submission_id=submission_id, viewer=user)
        full = True
    except NotFound:
        if rank is None:
            return templates.TemplateResponse(
                request,
                "message.html",
                {"title": "Not found", "message": f"submission {submission_id} does not exist"},
                status_code=404,
            )
        submission = storage.load_submission(session=session, submission_id=submission_id)
        full = False
    public = presenters.submission_public(submission, viewer=user, view=view)
    row = next((r for r in view.board.rows if r.submission_id == submission_id), None)
    if not full and row is not None:
        # A ranked entry is public already: show what the leaderboard shows (its score there, the frozen one while
        # frozen), nothing more. Errors (a failed rerun's, say) and evaluations are for the owner and organisers.
        score = Score(overall=row.score, ci_low=row.ci_low, ci_high=row.ci_high, per_scenario=row.per_scenario)
        public = public.model_copy(update={"score": score, "score_revealed": None, "error": None, "evaluations": []})
    return templates.TemplateResponse(
        request,
        "submission.html",
        {
            "submission": public,
            "full": full,
            "row": row,
            "chart": charts.score_chart([row]) if row else "",
        },
    )
