"""Who is reading an HTML page: a bearer token (as the API), or the sign-in cookie that ``/signin`` sets.

The cookie holds no token. It names the API token the participant signed in with, an expiry, and an HMAC of both
and the token's count of sign-outs, keyed with that token's stored SHA-256, which only the server's database holds:
so it cannot be forged without the database (whose reader sees every submission anyway), it is no credential for
the API, it survives restarts and works across server processes without a secret to configure, and revoking the
token ends every session signed in with it. Signing out deletes the cookie and counts a sign-out, which ends every
session signed in with that token on the server (a copy of the cookie kept elsewhere, other browsers signed in with
the same token); otherwise a session lasts until its expiry (``SESSION_SECONDS``).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from typing import Annotated

from fastapi import Depends, Request, Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.config import Settings
from layersched.server.deps import OptionalUser, SessionDep
from layersched.server.models import ApiToken, User

COOKIE = "layersched_session"
SESSION_SECONDS = 12 * 3600  # a working day; the token itself lasts until it is revoked
_VERSION = "s1"
# The whole cookie, strictly: a header is read as latin-1, so str.isdigit() would take '²' (which int() refuses), a
# long run of digits passes int()'s limit, and hmac.compare_digest raises on a non-ASCII string. Anything else is
# nobody signed in, never a 500.
_COOKIE_SHAPE = re.compile(rf"{_VERSION}\.([1-9][0-9]{{0,9}})\.([1-9][0-9]{{0,9}})\.([0-9a-f]{{64}})")


def _mac(token: ApiToken, expires: int) -> str:
    generation = token.session_generation
    message = f"layersched page session|{_VERSION}|{token.id}|{token.user_id}|{generation}|{expires}".encode()
    return hmac.new(token.token_sha256.encode(), message, hashlib.sha256).hexdigest()


def sign_in(*, session: Session, plain_token: str, now: float | None = None) -> tuple[User, str] | None:
    """The user of ``plain_token`` and the cookie value of a new session; None for an unknown or revoked token."""
    user = storage.authenticate(session=session, token=plain_token)
    if user is None:
        return None
    lookup = plain_token.split("_", 2)[1]  # authenticate checked the shape
    token = session.scalars(select(ApiToken).where(ApiToken.lookup == lookup)).one()
    expires = int(now if now is not None else time.time()) + SESSION_SECONDS
    return user, f"{_VERSION}.{token.id}.{expires}.{_mac(token, expires)}"


def session_user(*, session: Session, cookie: str, now: float | None = None) -> User | None:
    """The signed-in user of a cookie value; None when it is malformed, forged, expired, signed out or its token
    revoked."""
    token = session_token(session=session, cookie=cookie, now=now)
    return token.user if token is not None else None


def session_token(*, session: Session, cookie: str, now: float | None = None) -> ApiToken | None:
    """The token a valid cookie was signed in with (see ``session_user``)."""
    shape = _COOKIE_SHAPE.fullmatch(cookie)
    if shape is None:
        return None
    token_id, expires, mac = int(shape[1]), int(shape[2]), shape[3]
    if expires < (now if now is not None else time.time()) or token_id > 2**31 - 1:
        return None
    token = session.get(ApiToken, token_id)
    if token is None or token.revoked_at is not None:
        return None
    return token if hmac.compare_digest(mac, _mac(token, expires)) else None


def site_origin(request: Request, settings: Settings) -> str:
    """This site's address as a browser's Origin header gives it: ``LAYERSCHED_PUBLIC_URL`` when set (behind a TLS
    proxy whose forwarded scheme uvicorn does not trust, the request itself reads as plain http), else the request's."""
    return settings.public_url or f"{request.url.scheme}://{request.url.netloc}"


def set_session_cookie(response: Response, request: Request, settings: Settings, value: str) -> None:
    # Strict: no other site can make the browser send it (no CSRF on the pages' forms); Secure wherever the site is
    # served over https.
    response.set_cookie(
        COOKIE,
        value,
        max_age=SESSION_SECONDS,
        path="/",
        httponly=True,
        samesite="strict",
        secure=site_origin(request, settings).startswith("https:"),
    )


def clear_session_cookie(response: Response, request: Request, settings: Settings) -> None:
    secure = site_origin(request, settings).startswith("https:")
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict", secure=secure)


def get_page_viewer(request: Request, session: SessionDep, bearer: OptionalUser) -> User | None:
    """A bearer token wins (scripts, tests); then the cookie. A stale cookie reads as nobody signed in."""
    if bearer is not None:
        return bearer
    cookie = request.cookies.get(COOKIE)
    return session_user(session=session, cookie=cookie) if cookie else None


PageViewer = Annotated[User | None, Depends(get_page_viewer)]
