"""Limits on request bodies, applied before anything reads them (an ASGI middleware).

FastAPI reads a route's body (a JSON document into memory, a multipart upload into a temporary file) before it
resolves any dependency, authentication included: without this, anyone could make the API hold or write a body of
any size (reviewed main: 195,849,502 bytes of chunked upload written to disk with no token, then a 401).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress

import anyio.to_thread
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session, sessionmaker
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from layersched.server.deps import get_current_user, get_optional_user
from layersched.server.errors import Unauthorized, error_response

# Every other body (JSON of a few fields: a rerun's evaluation set, a disqualification's reason) is far smaller.
MAX_REQUEST_BODY = 1024 * 1024


class _BodyOverLimit(Exception):
    """Raised into the app from ``receive`` once a body passes its limit; RequestBodyLimits answers 413 itself."""


class RequestBodyLimits:
    """Guards every request before anything reads its body.

    The upload route: the bearer token first (401, with the route's own dependency functions, off the event loop),
    before a byte of the body is read; then the bundle limit (413 ``bundle_too_large``). Every other request: at most
    ``MAX_REQUEST_BODY`` (413 ``request_too_large``). A declared ``Content-Length`` over the limit is refused at
    once; otherwise the body is counted as it arrives (a chunked body declares no length), and at the limit the
    middleware answers 413 itself, whatever the app was doing with the body at that point.
    """

    # Room for the multipart framing and the name and description fields around the file.
    SLACK = 64 * 1024

    def __init__(
        self, app: ASGIApp, *, upload_limit: int, upload_path: str, sessionmaker: sessionmaker[Session]
    ) -> None:
        self.app, self.limit, self.path, self.sessionmaker = app, upload_limit, upload_path, sessionmaker
        self._bearer = HTTPBearer(auto_error=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        upload = scope["method"] == "POST" and scope["path"].rstrip("/") == self.path
        if upload:
            credentials = await self._bearer(HTTPConnection(scope))
            refused = await anyio.to_thread.run_sync(self._unauthorized, credentials)
            if refused is not None:
                response = error_response(401, refused.code, refused.message, {"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
            limit, code, rule = self.limit + self.SLACK, "bundle_too_large", f"bundles may be at most {self.limit}"
        else:
            limit, code, rule = MAX_REQUEST_BODY, "request_too_large", f"bodies may be at most {MAX_REQUEST_BODY}"

        noun = "upload" if upload else "request body"

        def too_large(size: str) -> JSONResponse:
            return error_response(413, code, f"the {noun} is {size} bytes; {rule}")

        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            await too_large(length.decode())(scope, receive, send)
            return
        await self._call_within_limit(scope, receive, send, limit, too_large)

    def _unauthorized(self, credentials: HTTPAuthorizationCredentials | None) -> Unauthorized | None:
        with self.sessionmaker() as session:
            try:
                get_current_user(get_optional_user(session, credentials))
            except Unauthorized as exc:
                return exc
        return None

    async def _call_within_limit(
        self, scope: Scope, receive: Receive, send: Send, limit: int, too_large: Callable[[str], JSONResponse]
    ) -> None:
        received = 0
        over = responded = False

        async def receive_within_limit() -> Message:
            nonlocal received, over
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    # Raised, not a truncated body: the multipart parser must fail (closing its temporary files),
                    # never hand the route a file cut at the limit.
                    over = True
                    raise _BodyOverLimit
            return message

        async def send_unless_over(message: Message) -> None:
            nonlocal responded
            if over:
                return  # the app's answer to the failed parse (a 400); the 413 below is the client's
            responded = True
            await send(message)

        with suppress(_BodyOverLimit):  # when the app lets it through rather than answering
            await self.app(scope, receive_within_limit, send_unless_over)
        if over and not responded:
            await too_large(f"more than {limit}")(scope, receive, send)
