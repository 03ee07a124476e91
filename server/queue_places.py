"""The queue places a response shows: read from the database once per request, and only when a submission in it is
queued (``storage.queue_view``)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy.orm import Session

from layersched.server.config import Settings
from layersched.server.models import utcnow
from layersched.server.schemas import QueuePlacePublic
from layersched.server.storage.queue_view import QueueSnapshot, queue_snapshot


class QueuePlaces:
    def __init__(self, session: Session, settings: Settings) -> None:
        self._session, self._settings = session, settings
        self._snapshot: QueueSnapshot | None = None

    def place(self, evaluation_id: int) -> QueuePlacePublic | None:
        if self._snapshot is None:
            within = dt.timedelta(seconds=self._settings.worker_alive_s)
            self._snapshot = queue_snapshot(session=self._session, now=utcnow(), alive_within=within)
        place = self._snapshot.place(evaluation_id)
        if place is None:
            return None
        return QueuePlacePublic(
            position=place.position,
            queued=place.queued,
            workers=place.workers,
            starts_in_s=place.starts_in_s,
            done_in_s=place.done_in_s,
        )
