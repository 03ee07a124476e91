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
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from layersched.server import charts, leaderboard, presenters, replays, storage, visibility
from layersched.server.deps import PageDep, RowId, SessionDep, SettingsDep
from layersched.server.errors import Conflict, Forbidden, NotFound
from layersched.server.models import EvalSet, Phase, Submission, User, utcnow
from layersched.server.queue_places import QueuePlaces
from layersched.server.routes.page_auth import PageViewer
from layersched.server.routes.page_render import message, render
from layersched.server.routes.signin import signin_page
from layersched.server.schemas import Leaderboard, LeaderboardRow, Score
from layersched.server.tracebacks import split_failure
from layersched.server.tracks import metric_columns, track_fields

router = APIRouter(include_in_schema=False)


def in_set_order(evalset: EvalSet, names: set[str]) -> list[str]:
    """``names`` in the order of the set's scenarios (the order its file gives them), any others after, sorted."""
    order = [str(sc["name"]) for sc in evalset.scenarios if sc.get("name") in names]
    return order + sorted(names - set(order))


def _page_phase(session: Session, name: str | None, shown: list[Phase]) -> Phase:
    """The phase whose board the page shows: ``name``, else the API's default, else (several open) the first open
    phase the reader may see."""
    try:
        return storage.resolve_phase(session=session, name=name)
    except Conflict:
        now = utcnow()
        open_now = [p for p in shown if storage.is_open(p, now)]
        if not open_now:
            raise
        return open_now[0]


@router.get("/", response_class=HTMLResponse)
def leaderboard_page(
    request: Request,
    session: SessionDep,
    viewer: PageViewer,
    settings: SettingsDep,
    split: Literal["public", "private"] = "public",
    phase: str | None = None,
    sort: Annotated[str | None, Query(max_length=60)] = None,
) -> HTMLResponse:
    """The board of one phase, with the list of the phases whose boards the reader may see, each linked; ``sort``
    orders its rows by one of the track's metrics (``-`` in front: descending), else by score."""
    shown = [p for p in storage.list_phases(session=session) if storage.board_visible(p, viewer)]
    try:
        target = _page_phase(session, phase, shown)
        board = leaderboard.visible_leaderboard(session=session, phase=target, split=split, viewer=viewer)
    except (NotFound, Conflict) as exc:
        # No phase yet is the state of a new server, not the reader's error.
        status = 200 if not shown and phase is None else exc.status
        return message(request, "Leaderboard", exc.message, viewer=viewer, status_code=status)
    except Forbidden as exc:
        return message(request, "Leaderboard", exc.message, viewer=viewer, status_code=403)
    scenarios = in_set_order(target.evalset, {name for row in board.rows for name in row.per_scenario})
    columns = metric_columns(board.track)
    rows, sorted_by = _sorted_rows(board.rows, sort, {c.name for c in columns})
    deadline = settings.submission_deadline
    return render(
        request,
        "leaderboard.html",
        {
            "board": board,
            "rows": rows,
            "columns": columns,
            "sorted_by": sorted_by,
            "scenarios": scenarios,
            "chart": charts.score_chart(board.rows, reference=board.reference_baseline),
            "evalset": target.evalset,
            "phase": target,
            "phases": shown,
            "phase_state": storage.phase_state(target, utcnow()),
            "state": storage.get_leaderboard_state(session=session, phase=target),
            "deadline": deadline.astimezone(dt.timezone.utc) if deadline else None,
            "final_submissions": settings.final_submissions,
        },
        viewer=viewer,
    )


def _sorted_rows(rows: list[LeaderboardRow], sort: str | None, metrics: set[str]) -> tuple[list[LeaderboardRow], str]:
    """The board's rows by the metric ``sort`` names (``-name``: descending; rows without it last), else as ranked;
    and the order applied (``""``: the ranking)."""
    name = (sort or "").removeprefix("-")
    if name not in metrics:
        return rows, ""
    present = [r for r in rows if name in r.metrics]
    present.sort(key=lambda r: r.metrics[name], reverse=(sort or "").startswith("-"))
    return present + [r for r in rows if name not in r.metrics], sort or ""


@router.get("/submissions", response_class=HTMLResponse)
def submissions_page(request: Request, session: SessionDep, viewer: PageViewer, page: PageDep) -> HTMLResponse:
    """The reader's own submissions, newest first (an organiser's: everyone's), each linked to its page."""
    if viewer is None:
        return signin_page(request, next_url="/submissions", note="Sign in to see your submissions.", status_code=401)
    rows, count = storage.list_submissions(session=session, viewer=viewer, offset=page.offset, limit=page.limit)
    views = leaderboard.PublicViews(session, viewer)
    context = {
        "submissions": [presenters.submission_public(s, viewer=viewer, view=views.of(s.phase)) for s in rows],
        "count": count,
        "offset": page.offset,
        "limit": page.limit,
    }
    return render(request, "submissions.html", context, viewer=viewer)


def not_shown(request: Request, viewer: User | None, submission_id: int) -> HTMLResponse:
    if viewer is None:
        note = (
            f"Submission {submission_id} is shown to its owner, their team and the organisers only (it is not on the "
            "public leaderboard). If it is yours, sign in with your token."
        )
        return signin_page(request, next_url=f"/submissions/{submission_id}", note=note, status_code=401)
    if viewer.role == "organiser":
        return message(
            request, "Not found", f"submission {submission_id} does not exist", viewer=viewer, status_code=404
        )
    text = (
        f"submission {submission_id} is not one of yours (signed in as {viewer.name}): only its owner, their team and "
        "the organisers see it"
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


def _episode_table(session: Session, submission: Submission, sort: str | None) -> replays.EpisodeTable | None:
    """The table of the primary evaluation's episodes with a public workload (None: it has none)."""
    evaluation = storage.primary_evaluation(submission)
    if evaluation is None:
        return None
    try:
        track = storage.get_evalset(session=session, name=evaluation.evalset_name).track
    except NotFound:  # its set is not registered any more: nothing to say which track draws it
        return None
    table = replays.episode_table(session, evaluation, track, base_url=f"/submissions/{submission.id}", sort=sort)
    return table if table.count else None


@router.get("/submissions/{submission_id}", response_class=HTMLResponse)
def submission_page(
    request: Request,
    session: SessionDep,
    viewer: PageViewer,
    settings: SettingsDep,
    submission_id: RowId,
    sort: Annotated[str | None, Query(max_length=60)] = None,
) -> HTMLResponse:
    """Owners and organisers see everything, with the per-episode log and the table of the episodes whose workload
    is public (``sort``: its column); anyone sees a submission on the leaderboard."""
    try:
        submission = storage.get_submission(session=session, submission_id=submission_id, viewer=viewer)
        full = True
    except NotFound:
        try:
            submission = storage.load_submission(session=session, submission_id=submission_id)
        except NotFound:
            return not_shown(request, viewer, submission_id)  # as for one that exists: ids stay unrevealed
        full = False
    # The board of its phase (one the reader may not see has no rows for them: nothing of it is ranked).
    view = leaderboard.public_view(session=session, viewer=viewer, phase=submission.phase)
    if not full and view.rank(submission_id) is None:
        return not_shown(request, viewer, submission_id)
    public = presenters.submission_public(
        submission, viewer=viewer, view=view, queue=QueuePlaces(session, settings) if full else None
    )
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
            "episodes": _episode_table(session, submission, sort) if full else None,
            "failure": split_failure(public.error.message) if full and public.error else None,
            "scenarios": in_set_order(
                submission.phase.evalset, set(public.score.per_scenario) if public.score else set()
            ),
        },
        viewer=viewer,
    )
