"""The replay page of one episode of a submission: its schedule beside the reference baseline's, drawn as SVG on
the server (no script). Shown to whoever sees the submission whole (its owner, their team, the organisers), and only
for episodes whose workload is public: a keyed episode has no schedule kept, and its page says only that."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import HTMLResponse

from layersched.server import presenters, replays, storage, visibility
from layersched.server.deps import RowId, SessionDep
from layersched.server.errors import NotFound
from layersched.server.routes.page_auth import PageViewer
from layersched.server.routes.page_render import message, render
from layersched.server.routes.pages import not_shown
from layersched.server.tracks import server_track

router = APIRouter(include_in_schema=False)

# Scenario names and episode ids are the evaluation sets' names: letters, digits, '.', '_' and '-'.
NamePart = Annotated[str, Path(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]


@router.get("/submissions/{submission_id}/episodes/{scenario}/{episode}", response_class=HTMLResponse)
def replay_page(
    request: Request,
    session: SessionDep,
    viewer: PageViewer,
    submission_id: RowId,
    scenario: NamePart,
    episode: NamePart,
) -> HTMLResponse:
    try:
        submission = storage.get_submission(session=session, submission_id=submission_id, viewer=viewer)
    except NotFound:
        return not_shown(request, viewer, submission_id)
    evaluation = storage.primary_evaluation(submission)
    title = f"{submission.name}: {scenario}/{episode}"
    track_id = storage.get_evalset(session=session, name=evaluation.evalset_name).track if evaluation else None
    reference = server_track(track_id).reference_baseline if track_id else "the reference"
    try:
        row = replays.find_episode(evaluation, scenario, episode)
        body = replays.replay_html(session, row, names=(submission.name, reference))
    except replays.NoSchedule as exc:
        return message(request, title, exc.message, viewer=viewer, status_code=exc.status)
    public = presenters.submission_public(submission, viewer=viewer)
    context = {
        "submission": public,
        "scenario": scenario,
        "episode": row,
        "reference": reference,
        "body": body,
        "reader": visibility.audience(viewer, submission),
    }
    return render(request, "replay.html", context, viewer=viewer)
