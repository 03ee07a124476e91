"""The FastAPI application: ``create_app(settings)`` wires storage, queue, routes and error bodies together.

Run with ``uvicorn --factory layersched.server.app:create_app``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from prometheus_client import CollectorRegistry
from starlette.exceptions import HTTPException as StarletteHTTPException

from layersched.server import leaderboard as ranking
from layersched.server.body_limits import RequestBodyLimits
from layersched.server.config import Settings, get_settings
from layersched.server.db import make_engine, make_probe_engine, make_sessionmaker
from layersched.server.errors import ServiceError, error_response
from layersched.server.metrics import ServiceCollector
from layersched.server.notifications import Notifier
from layersched.server.queue import CeleryEnqueuer, Enqueuer
from layersched.server.routes import (
    admin,
    analytics,
    api_docs,
    challenge,
    evalsets,
    exports,
    health,
    leaderboard,
    me,
    moderation,
    organiser_pages,
    pages,
    phases,
    quota,
    replays,
    signin,
    signin_links,
    submission_views,
    submissions,
    teams,
    users,
    webhooks,
)
from layersched.server.schemas import ErrorBody
from layersched.server.tracks import load_tracks
from layersched.sim.tracks import get_track, track_ids
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
        413: "upload over the bundle limit (bundle_too_large), or another body over 1 MiB (request_too_large)",
        422: "invalid parameters, body, bundle, policy or roster (invalid_request, invalid_bundle, invalid_policy, "
        "invalid_roster)",
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


def create_app(settings: Settings | None = None, *, enqueuer: Enqueuer | None = None) -> FastAPI:
    """The app for ``settings`` (default: from the environment); ``enqueuer`` replaces Celery in tests."""
    settings = settings or get_settings()
    load_tracks(settings.track_modules)  # before any request: every page of a board reads its set's track
    engine = make_engine(settings.database_url)
    probe_engine = make_probe_engine(settings.database_url, timeout_s=settings.health_probe_timeout_s)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Webhook deliveries and alerts run beside the API, never in the pipeline (server/notifications.py).
        notifier = Notifier(sessions=app.state.sessionmaker, settings=settings) if settings.notify_interval_s else None
        if notifier is not None:
            notifier.start()
        try:
            yield
        finally:
            if notifier is not None:
                notifier.stop()
            engine.dispose()
            probe_engine.dispose()

    app = FastAPI(
        title="layersched API",
        summary="The evaluation service of the scheduling challenge: submissions, phases, leaderboards and teams on "
        f"its tracks ({'; '.join(f'{t}: {get_track(t).title}' for t in track_ids())})",
        version=f"1 (simulator {SIM_VERSION})",
        lifespan=lifespan,
        docs_url=None,  # api_docs serves both pages without a CDN
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.probe_engine = probe_engine  # /healthz's: a connection per probe, bounded in time
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
        RequestBodyLimits,
        upload_limit=settings.max_bundle_bytes,
        upload_path=f"{API_PREFIX}/submissions",
        sessionmaker=app.state.sessionmaker,
    )
    for module in (
        me,
        submissions,
        leaderboard,
        phases,
        teams,
        evalsets,
        admin,
        users,
        submission_views,
        exports,
        quota,
        moderation,
        analytics,
        webhooks,
        challenge,
    ):
        app.include_router(module.router, prefix=API_PREFIX, responses=ERROR_RESPONSES)
    app.include_router(health.router)
    app.include_router(pages.router)
    app.include_router(replays.router)
    app.include_router(organiser_pages.router)
    app.include_router(signin.router)
    app.include_router(signin_links.router)
    app.include_router(api_docs.router)
    api_docs.mount_assets(app)
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
