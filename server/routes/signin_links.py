"""One-time sign-in links (``/signin/link/CODE``): the page asks before it uses the link (a mail scanner that opens
every link must not use it up), then signs the browser in and shows a fresh API token once, for the CLI."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, Response

from layersched.server.deps import SessionDep, SettingsDep
from layersched.server.errors import ServiceError
from layersched.server.models import utcnow
from layersched.server.routes import page_auth
from layersched.server.routes.page_render import message, render
from layersched.server.routes.signin import cross_site
from layersched.server.storage.signin_links import peek_signin_link, use_signin_link

router = APIRouter(include_in_schema=False)
Code = Annotated[str, PathParam(max_length=100)]


@router.get("/signin/link/{code}", response_class=HTMLResponse)
def show_link(request: Request, session: SessionDep, code: Code) -> Response:
    try:
        user = peek_signin_link(session=session, code=code, now=utcnow())
    except ServiceError as exc:
        return message(request, "Sign-in link", exc.message, viewer=None, status_code=exc.status)
    return render(request, "signin_link.html", {"user": user, "code": code, "token": None}, viewer=None)


@router.post("/signin/link/{code}", response_class=HTMLResponse)
def use_link(request: Request, session: SessionDep, settings: SettingsDep, code: Code) -> Response:
    if refused := cross_site(request, settings, "sign-in"):
        return refused
    try:
        user, token = use_signin_link(session=session, code=code, now=utcnow())
    except ServiceError as exc:
        return message(request, "Sign-in link", exc.message, viewer=None, status_code=exc.status)
    signed = page_auth.sign_in(session=session, plain_token=token)
    assert signed is not None  # the token was made a moment ago
    _user, cookie = signed
    context = {"user": user, "code": code, "token": token, "server": page_auth.site_origin(request, settings)}
    response = render(request, "signin_link.html", context, viewer=user)
    page_auth.set_session_cookie(response, request, settings, cookie)
    return response
