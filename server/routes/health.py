"""Operations: ``/healthz`` for load balancers and orchestrators, ``/metrics`` for Prometheus.

Neither is for participants (issue 30): ``/healthz`` tells anyone only whether the service is healthy, the database's
and the broker's answers (their error text names hosts, databases and drivers) go to organisers and the log;
``/metrics`` needs the metrics token (Prometheus's, which opens nothing else) or an organiser's token, since its
counts show when organisers queue reruns and audits.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials
from kombu.exceptions import OperationalError
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy.exc import SQLAlchemyError

from layersched.server.config import Settings
from layersched.server.db import ping_database
from layersched.server.deps import MetricsReader, SessionDep, bearer, get_optional_user
from layersched.server.queue import ping_broker
from layersched.server.schemas import ErrorBody, Health

router = APIRouter(tags=["operations"])
log = logging.getLogger(__name__)
_UNKNOWN_TOKEN: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "a token was sent that is unknown or revoked"}
}


@router.get("/healthz", response_model=Health, responses={503: {"model": Health}, **_UNKNOWN_TOKEN})
def healthz(
    request: Request,
    session: SessionDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> JSONResponse:
    """200 ``{"status": "ok"}`` when the database and the broker answer, else 503 ``{"status": "unavailable"}``.
    An organiser's token adds each one's answer (``database``, ``broker``: ``ok`` or the error); the log has them
    always. While the database is down no token can be checked: everyone then gets the plain answer.

    Each probe waits at most ``LAYERSCHED_HEALTH_PROBE_TIMEOUT_S`` to connect and to be answered, so that a
    dependency that accepts connections and never answers makes the service unavailable, not this request hang.
    The settings are the app's own, not ``SettingsDep``: those read the challenge's rules from the database, with
    no such bound."""
    settings: Settings = request.app.state.settings
    answers = {"database": "ok", "broker": "ok"}
    try:
        ping_database(request.app.state.probe_engine)
    except SQLAlchemyError as exc:
        answers["database"] = f"error: {type(exc).__name__}: {exc}".splitlines()[0]
    try:
        ping_broker(settings.broker_url, timeout=settings.health_probe_timeout_s)
    except (OperationalError, OSError) as exc:
        answers["broker"] = f"error: {exc}".splitlines()[0]
    healthy = all(answer == "ok" for answer in answers.values())
    if not healthy:
        log.warning("unhealthy: database %s; broker %s", answers["database"], answers["broker"])
    body: dict[str, str] = {"status": "ok" if healthy else "unavailable"}
    if credentials is not None and answers["database"] == "ok":
        user = get_optional_user(session, credentials)  # a token that is sent must be valid (401 otherwise)
        if user is not None and user.role == "organiser":
            body |= answers
    return JSONResponse(body, status_code=200 if healthy else 503)


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {"content": {CONTENT_TYPE_LATEST.split(";")[0]: {}}, "description": "Prometheus text"},
        401: {"model": ErrorBody, "description": "no token, or an unknown or revoked one"},
        403: {"model": ErrorBody, "description": "the token is a participant's"},
    },
)
def metrics(request: Request, _reader: MetricsReader) -> Response:
    """The service's Prometheus metrics, for the metrics token (``LAYERSCHED_METRICS_TOKEN_SHA256``) or an
    organiser's token (``Authorization: Bearer``; README: Production)."""
    return Response(generate_latest(request.app.state.metrics), media_type=CONTENT_TYPE_LATEST)
