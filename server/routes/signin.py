"""Signing in to the pages with an API token (``/signin``) and out again (``/signout``); see ``page_auth``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from layersched.server import storage
from layersched.server.config import Settings
from layersched.server.deps import SessionDep, SettingsDep
from layersched.server.routes import page_auth
from layersched.server.routes.page_auth import PageViewer
from layersched.server.routes.page_render import message, render

router = APIRouter(include_in_schema=False)
DEFAULT_NEXT = "/submissions"
TOKEN_MAX = 200  # far above a real token's length; checked here, since a form field's max_length would quote it


def safe_next(target: str | None) -> str:
    """Where to go after signing in: a path on this site only (``//host`` or ``https://...`` would send the
    participant, just signed in, to a page of someone else's making)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return DEFAULT_NEXT
    return target


def signin_page(
    request: Request, *, next_url: str, note: str | None = None, error: str | None = None, status_code: int = 200
) -> HTMLResponse:
    context = {"next_url": safe_next(next_url), "note": note, "error": error}
    return render(request, "signin.html", context, viewer=None, status_code=status_code)


def cross_site(request: Request, settings: Settings, action: str) -> HTMLResponse | None:
    """The refusal of a form posted from another site; None for this one's. SameSite=Strict keeps the cookie off
    other sites' requests; this also stops them signing a browser in or out. Behind a proxy, set
    ``LAYERSCHED_PUBLIC_URL`` (or this site reads as another): the message names both, for whoever sets it up."""
    origin = request.headers.get("origin")
    ours = page_auth.site_origin(request, settings)
    if origin is None or origin == ours:
        return None
    text = f"{action} from {origin!r} is refused: this site is {ours!r}"
    return message(request, "Forbidden", text, viewer=None, status_code=403)


@router.get("/signin", response_class=HTMLResponse)
def show_signin(request: Request, viewer: PageViewer, next: Annotated[str | None, Query()] = None) -> Response:
    if viewer is not None:
        return RedirectResponse(safe_next(next), status_code=303)
    return signin_page(request, next_url=next or DEFAULT_NEXT)


@router.post("/signin", response_class=HTMLResponse)
def signin(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    token: Annotated[str, Form()] = "",
    next: Annotated[str, Form(max_length=2000)] = DEFAULT_NEXT,
) -> Response:
    if refused := cross_site(request, settings, "sign-in"):
        return refused
    token = token.strip()
    if len(token) > TOKEN_MAX:
        error = f"that is not a layersched token ({len(token)} characters; a token has at most {TOKEN_MAX})"
        return signin_page(request, next_url=next, error=error, status_code=422)
    signed = page_auth.sign_in(session=session, plain_token=token) if token else None
    if signed is None:
        # The token itself is not repeated back: the page may be on a shared screen.
        if not token:
            error = "no token was given: paste the token an organiser gave you (it starts with 'lst_')"
        elif not token.startswith("lst_"):
            error = f"that is not a layersched token ({len(token)} characters, not starting with 'lst_')"
        else:
            error = f"that token ({len(token)} characters) is unknown or revoked: ask an organiser for a new one"
        return signin_page(request, next_url=next, error=error, status_code=401)
    _user, cookie = signed
    response = RedirectResponse(safe_next(next), status_code=303)
    page_auth.set_session_cookie(response, request, settings, cookie)
    return response


@router.post("/signout")
def signout(request: Request, session: SessionDep, settings: SettingsDep) -> Response:
    if refused := cross_site(request, settings, "sign-out"):
        return refused
    cookie = request.cookies.get(page_auth.COOKIE)
    token = page_auth.session_token(session=session, cookie=cookie) if cookie else None
    if token is not None:
        storage.end_page_sessions(session=session, token_id=token.id)
    response = RedirectResponse("/", status_code=303)
    page_auth.clear_session_cookie(response, request, settings)
    return response
