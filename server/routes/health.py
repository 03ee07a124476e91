from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from kombu.exceptions import OperationalError
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from layersched.server.deps import SessionDep, SettingsDep
from layersched.server.queue import ping_broker
from layersched.server.schemas import Health

router = APIRouter(tags=["operations"])


@router.get("/healthz", response_model=Health, responses={503: {"model": Health}})
def healthz(session: SessionDep, settings: SettingsDep) -> JSONResponse:
    """200 when the database and the broker answer; 503 naming the one that does not."""
    status = {"database": "ok", "broker": "ok"}
    try:
        session.execute(text("SELECT 1"))
    except SQLAlchemyError as exc:
        status["database"] = f"error: {type(exc).__name__}: {exc}".splitlines()[0]
    try:
        ping_broker(settings.broker_url, timeout=2.0)
    except (OperationalError, OSError) as exc:
        status["broker"] = f"error: {exc}".splitlines()[0]
    healthy = all(v == "ok" for v in status.values())
    return JSONResponse(status, status_code=200 if healthy else 503)


@router.get("/metrics", response_class=Response)
def metrics(request: Request) -> Response:
    return Response(generate_latest(request.app.state.metrics), media_type=CONTENT_TYPE_LATEST)
