"""The organisers' pages: every submission with filters and paging (``/admin/submissions``) and the analytics page
(``/admin/analytics``). No JavaScript, as every page. Anyone not signed in gets the sign-in page (401), a participant
a refusal (403)."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import ValidationError

from layersched.server import analytics_charts, storage
from layersched.server.deps import MAX_ROW_ID, SessionDep, SettingsDep
from layersched.server.errors import ServiceError
from layersched.server.models import EVALUATION_STATES, User
from layersched.server.routes.analytics import read_analytics
from layersched.server.routes.filters import FILTER_FIELDS, filter_from
from layersched.server.routes.page_auth import PageViewer
from layersched.server.routes.page_render import message, render
from layersched.server.routes.signin import signin_page
from layersched.server.routes.submission_views import submission_rows
from layersched.server.storage.submission_views import SERVICE_FAILURES

router = APIRouter(include_in_schema=False)


def organisers_only(request: Request, viewer: User | None, path: str) -> Response | None:
    """The refusal of a reader who is not an organiser; None for an organiser."""
    if viewer is None:
        return signin_page(request, next_url=path, note="This page is for organisers: sign in.", status_code=401)
    if viewer.role != "organiser":
        text = f"this page is for organisers; you are signed in as {viewer.name}, a {viewer.role}"
        return message(request, "Organisers only", text, viewer=viewer, status_code=403)
    return None


@router.get("/admin/submissions", response_class=HTMLResponse)
def submissions_page(
    request: Request,
    session: SessionDep,
    viewer: PageViewer,
    offset: Annotated[int, Query(ge=0, le=MAX_ROW_ID)] = 0,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> Response:
    if refused := organisers_only(request, viewer, "/admin/submissions"):
        return refused
    # The form sends every field, empty ones as "": an empty field is no filter.
    given = {k: v for k in FILTER_FIELDS if (v := request.query_params.get(k, "").strip())}
    try:
        chosen = filter_from(given)
        rows = submission_rows(session, chosen, offset, limit)
    except ValidationError as exc:
        first = exc.errors()[0]
        text = f"{first['loc'][-1]}: {first['msg']} (got {first.get('input')!r})"
        return message(request, "Submissions", text, viewer=viewer, status_code=422)
    except ServiceError as exc:
        return message(request, "Submissions", exc.message, viewer=viewer, status_code=exc.status)

    def page_link(start: int) -> str:
        return "/admin/submissions?" + urlencode({**given, "offset": start, "limit": limit})

    context = {
        "rows": rows,
        "given": given,
        "phases": storage.list_phases(session=session),
        "states": EVALUATION_STATES,
        "service_failures": SERVICE_FAILURES,
        "offset": offset,
        "limit": limit,
        "newer": page_link(max(offset - limit, 0)) if offset > 0 else None,
        "older": page_link(offset + limit) if offset + limit < rows.count else None,
    }
    return render(request, "admin_submissions.html", context, viewer=viewer)


@router.get("/admin/analytics", response_class=HTMLResponse)
def analytics_page(
    request: Request,
    session: SessionDep,
    viewer: PageViewer,
    settings: SettingsDep,
    days: Annotated[int, Query(ge=1, le=90)] = 14,
) -> Response:
    if refused := organisers_only(request, viewer, "/admin/analytics"):
        return refused
    figures = read_analytics(session, settings, days)
    context = {
        "a": figures,
        "submissions_chart": analytics_charts.submissions_chart(figures.days, figures.phases, figures.submissions),
        "best_chart": analytics_charts.best_chart(figures.days, figures.phases, figures.best),
    }
    return render(request, "admin_analytics.html", context, viewer=viewer)
