"""Rendering the HTML pages: one template environment, the signed-in reader in every page's context, and the
headers every page carries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from layersched.server import charts
from layersched.server.models import User
from layersched.server.tracebacks import split_failure

templates = Jinja2Templates(directory=Path(__file__).resolve().parent.parent / "templates")
templates.env.filters["ratio_color"] = charts.ratio_color
# An episode's message in one line: a traceback in it is shown once, above the table (tracebacks.split_failure).
templates.env.filters["failure_summary"] = lambda message: split_failure(message).summary if message else message

# The pages run no script at all; their styles are inline (base.html, the chart's colours). Forms post only here.
PAGE_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)


def render(
    request: Request,
    template: str,
    context: dict[str, Any],
    *,
    viewer: User | None,
    status_code: int = 200,
    csp: str = PAGE_CSP,
) -> HTMLResponse:
    response = templates.TemplateResponse(request, template, {**context, "viewer": viewer}, status_code=status_code)
    response.headers["Content-Security-Policy"] = csp
    response.headers["X-Content-Type-Options"] = "nosniff"
    if viewer is not None:  # a signed-in page shows what is the reader's alone: no shared cache may keep it
        response.headers["Cache-Control"] = "private, no-store"
    return response


def message(request: Request, title: str, text: str, *, viewer: User | None, status_code: int) -> HTMLResponse:
    return render(request, "message.html", {"title": title, "message": text}, viewer=viewer, status_code=status_code)
