"""The FastAPI application: ``create_app(settings)`` wires storage, queue, routes and error bodies together.

Run with ``uvicorn --factory layersched.server.app:create_app``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CollectorRegistry
from sqlalchemy.orm import Session, sessionmaker
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from layersched.server import leaderboard as ranking
from layersched.server.config import Settings, get_settings
from layersched.server.db import make_engine, make_sessionmaker
from layersched.server.deps import get_current_user, get_optional_user
from layersched.server.errors import ServiceError, Unauthorized
from layersched.server.metrics import ServiceCollector
from layersched.server.queue import CeleryEnqueuer, Enqueuer
from layersched.server.routes import admin, evalsets, health, leaderboard, me, pages, submissions
from layersched.server.schemas import ErrorBody
from layersched.sim.version import SIM_VERSION

API_PREFIX = "/api/v1"
# Declared on every API route so the OpenAPI document tells clients (and schemathesis) the real error body, not
# FastAPI's default ``{"detail": ...}`` validation error. Which of them a route can return is in docs/API.md.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": description}
    for status, description in {
        400: "malformed request body (invalid_request)",
        401: "missing, unknown or revoked token (unauthorized)",
        403: "not allowed for this role (forbidden)",
        404: "no such row, or not the caller's (not_found)",
        409: "contradicts the current state (conflict)",
        413: "upload over the bundle limit (bundle_too_large)",
        422: "invalid parameters, body, bundle or policy (invalid_request, invalid_bundle, invalid_policy)",
        429: "daily quota or in-flight limit reached (quota_exceeded, too_many_in_flight)",
        503: "a service the request needs is unavailable (storage_unavailable)",
    }.items()
}
_HTTP_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
}


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


def create_app(settings: Settings | None = None, *, enqueuer: Enqueuer | None = None) -> FastAPI:
    """The app for ``settings`` (default: from the environment); ``enqueuer`` replaces Celery in tests."""
    settings = settings or get_settings()
    engine = make_engine(settings.database_url)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        engine.dispose()

    app = FastAPI(
        title="layersched",
        summary="Evaluation service of the layer-aware container scheduling challenge",
        version=f"1 (simulator {SIM_VERSION})",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessionmaker = make_sessionmaker(engine)
    ranking.configure_cache(
        engine,
        max_age_s=settings.leaderboard_cache_s,
        ladder_step=settings.public_ladder_step,
        final_submissions=settings.final_submissions,
    )
    app.state.enqueuer = enqueuer or CeleryEnqueuer(settings.broker_url)
    app.state.metrics = CollectorRegistry()
    app.state.metrics.register(ServiceCollector(app.state.sessionmaker, settings.broker_url))

    _add_error_handlers(app)
    app.add_middleware(
        UploadSizeLimit,
        limit=settings.max_bundle_bytes,
        path=f"{API_PREFIX}/submissions",
        sessionmaker=app.state.sessionmaker,
    )
    for module in (me, submissions, leaderboard, evalsets, admin):
        app.include_router(module.router, prefix=API_PREFIX, responses=ERROR_RESPONSES)
    app.include_router(health.router)
    app.include_router(pages.router)
    return app


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def service_error(_request: Request, exc: ServiceError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return error_response(exc.status, exc.code, exc.message, headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "request"
        message = f"{where}: {first.get('msg', 'invalid value')}"
        if first.get("type") != "missing" and not isinstance(first.get("input"), dict | list | bytes | None):
            message += f" (got {first['input']!r})"
        return error_response(422, "invalid_request", message)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, "http_error")
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = f"no route {request.url.path!r}"
        return error_response(exc.status_code, code, message, dict(exc.headers or {}) or None)


class _BodyOverLimit(Exception):
    """Raised into the app from ``receive`` once an upload passes the limit; UploadSizeLimit answers 413 itself."""


class UploadSizeLimit:
    """Guards the upload route before anything reads its body: the token first (401), then the size (413).

    FastAPI parses ``File``/``Form`` parameters, spooling the file to a temporary file, before it resolves any
    dependency, authentication included; so the route's own checks come only after the whole body has been read
    and written to disk. This middleware runs first: it checks the bearer token from the header (with the route's
    own dependency functions, off the event loop) before a byte of the body is read; it refuses a declared
    ``Content-Length`` over the limit; and it counts the body as it arrives (a chunked upload declares no length),
    stopping at the limit and answering 413 itself, whatever the app was doing with the body at that point.
    """

    # Room for the multipart framing and the name and description fields around the file.
    SLACK = 64 * 1024

    def __init__(self, app: ASGIApp, *, limit: int, path: str, sessionmaker: sessionmaker[Session]) -> None:
        self.app, self.limit, self.path, self.sessionmaker = app, limit, path, sessionmaker
        self._bearer = HTTPBearer(auto_error=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not (scope["type"] == "http" and scope["method"] == "POST" and scope["path"].rstrip("/") == self.path):
            await self.app(scope, receive, send)
            return
        credentials = await self._bearer(HTTPConnection(scope))
        refused = await anyio.to_thread.run_sync(self._unauthorized, credentials)
        if refused is not None:
            response = error_response(401, refused.code, refused.message, {"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit + self.SLACK:
            await self._too_large(f"the upload is {int(length)} bytes")(scope, receive, send)
            return
        await self._call_within_limit(scope, receive, send)

    def _unauthorized(self, credentials: HTTPAuthorizationCredentials | None) -> Unauthorized | None:
        with self.sessionmaker() as session:
            try:
                get_current_user(get_optional_user(session, credentials))
            except Unauthorized as exc:
                return exc
        return None

    def _too_large(self, what: str) -> JSONResponse:
        return error_response(413, "bundle_too_large", f"{what}; bundles may be at most {self.limit}")

    async def _call_within_limit(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self.limit + self.SLACK
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
            await self._too_large(f"the upload is more than {limit} bytes")(scope, receive, send)
