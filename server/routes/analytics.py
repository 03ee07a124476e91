"""``GET /admin/analytics``: the figures of the organisers' analytics page, as JSON (the page renders the same)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Annotated

from fastapi import APIRouter, Query
from kombu.exceptions import OperationalError
from sqlalchemy.orm import Session

from layersched.server.config import Settings
from layersched.server.deps import Organiser, SessionDep, SettingsDep
from layersched.server.models import utcnow
from layersched.server.organiser_schemas import AnalyticsPublic
from layersched.server.queue import queue_depths
from layersched.server.storage.analytics import analytics

router = APIRouter(prefix="/admin", tags=["organisers"])
Days = Annotated[int, Query(ge=1, le=90, description="how many UTC days back, today included")]


def read_analytics(session: Session, settings: Settings, days: int) -> AnalyticsPublic:
    figures = analytics(
        session=session, now=utcnow(), days=days, alive_within=dt.timedelta(seconds=settings.worker_alive_s)
    )
    try:
        broker: dict[str, int] | None = queue_depths(settings.broker_url, timeout=1.0)
    except (OperationalError, OSError):
        broker = None
    return AnalyticsPublic.model_validate({**dataclasses.asdict(figures), "broker_queues": broker})


@router.get("/analytics", response_model=AnalyticsPublic)
def get_analytics(session: SessionDep, _actor: Organiser, settings: SettingsDep, days: Days = 14) -> AnalyticsPublic:
    """Submissions per day and phase, failures by category, queue wait and run time per day (p50, p95), the queue
    now (database and broker), the workers' heartbeats, and each phase's best public score over time."""
    return read_analytics(session, settings, days)
