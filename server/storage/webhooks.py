"""The challenge's webhooks and their outbox (``notifications``).

A notification is written in the transaction of what it reports (an evaluation's end: ``record_evaluation_end``, an
alert) and delivered later by ``server.notifications``, which claims due rows (a conditional update: of several API
processes, one delivers each), and records each attempt: delivered, or retried later with backoff, or given up after
``MAX_ATTEMPTS``. So a slow or dead receiver never holds up a result, and nothing is sent twice on purpose.

What a payload may carry is decided here, once: of an evaluation its state, category and the participant's version
of its error (of a hidden episode only its status and step, ``Evaluation.public_error_message``), never the
organisers' message, an episode's output or the private score.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from layersched.server.errors import InvalidRequest, NotFound
from layersched.server.models import Evaluation, Notification, User, Webhook
from layersched.server.storage.audit import add_log_entry
from layersched.server.storage.members import team_of

EVENTS = ("evaluation", "alert")
MAX_ATTEMPTS = 8
URL_MAX = 2000


def check_url(url: str) -> str:
    """An http(s) URL with a host, or InvalidRequest naming it."""
    parts = urlsplit(url)
    if len(url) > URL_MAX:
        raise InvalidRequest(f"the webhook URL has {len(url)} characters, the most is {URL_MAX}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidRequest(f"{url!r} is not an http(s) URL with a host: a webhook must be one (e.g. https://...)")
    return url


def add_webhook(*, session: Session, url: str, format: str, events: list[str], actor: User) -> Webhook:
    check_url(url)
    unknown = [e for e in events if e not in EVENTS]
    if unknown or not events:
        raise InvalidRequest(f"events must be some of {', '.join(EVENTS)}, got {events!r}")
    webhook = Webhook(url=url, format=format, events=sorted(set(events)), created_by_id=actor.id)
    session.add(webhook)
    session.flush()
    # The URL's path is often its secret (Slack's are): the log keeps where it points, not the key.
    where = f"{urlsplit(url).scheme}://{urlsplit(url).netloc}"
    add_log_entry(session, actor, "add_webhook", f"webhook:{webhook.id}", {"to": where, "format": format})
    session.commit()
    return webhook


def remove_webhook(*, session: Session, webhook_id: int, actor: User) -> None:
    webhook = session.get(Webhook, webhook_id)
    if webhook is None:
        raise NotFound(f"webhook {webhook_id} does not exist")
    session.delete(webhook)
    add_log_entry(session, actor, "remove_webhook", f"webhook:{webhook_id}", {})
    session.commit()


@dataclass(frozen=True)
class WebhookStats:
    webhook: Webhook
    pending: int
    delivered: int
    failed: int
    last_error: str | None


def list_webhooks(*, session: Session) -> list[WebhookStats]:
    rows = []
    for webhook in session.scalars(select(Webhook).order_by(Webhook.id)):
        counts = session.execute(
            select(
                func.count(Notification.id).filter(Notification.next_attempt_at.is_not(None)),
                func.count(Notification.delivered_at),
                func.count(Notification.failed_at),
            ).where(Notification.webhook_id == webhook.id)
        ).one()
        last_error = session.scalar(
            select(Notification.last_error)
            .where(Notification.webhook_id == webhook.id, Notification.last_error.is_not(None))
            .order_by(Notification.id.desc())
            .limit(1)
        )
        rows.append(WebhookStats(webhook, counts[0], counts[1], counts[2], last_error))
    return rows


def notify(session: Session, *, event: str, payload: dict[str, Any], now: dt.datetime, only: int | None = None) -> int:
    """Add a notification of ``event`` (``evaluation.*``, ``alert.*``) for each webhook that takes its kind (or
    webhook ``only``), in the caller's transaction; how many were added."""
    kind = event.split(".", 1)[0]
    added = 0
    for webhook in session.scalars(select(Webhook)):
        if (only is not None and webhook.id != only) or (only is None and kind not in webhook.events):
            continue
        session.add(
            Notification(webhook_id=webhook.id, event=event, payload=payload, created_at=now, next_attempt_at=now)
        )
        added += 1
    return added


def evaluation_payload(evaluation: Evaluation, now: dt.datetime) -> dict[str, Any]:
    """What a notification tells of an evaluation that ended (see the module docstring: nothing hidden)."""
    submission = evaluation.submission
    session = Session.object_session(evaluation)
    team = team_of(session=session, user_id=submission.owner_id) if session is not None else None
    score = (evaluation.score_public or {}).get("overall") if evaluation.state == "succeeded" else None
    return {
        "event": f"evaluation.{evaluation.state}",
        "at": now.astimezone(dt.timezone.utc).isoformat(),
        "evaluation": {
            "id": evaluation.id,
            "kind": evaluation.kind,
            "state": evaluation.state,
            "category": evaluation.error_category,
            "service_failure": evaluation.infrastructure_failure,
            "message": evaluation.public_error_message if evaluation.state == "failed" else None,
        },
        "submission": {
            "id": submission.id,
            "name": submission.name,
            "owner": submission.owner.name,
            "team": team.name if team is not None else None,
            "phase": submission.phase.name,
        },
        "public_score": score,
    }


def record_evaluation_end(session: Session, evaluation: Evaluation, now: dt.datetime) -> None:
    """The notification of an evaluation's end, in the transaction that ends it (nothing when no webhook takes
    evaluation events: one small query)."""
    if not any("evaluation" in w.events for w in session.scalars(select(Webhook))):
        return
    notify(session, event=f"evaluation.{evaluation.state}", payload=evaluation_payload(evaluation, now), now=now)


def due_notifications(*, session: Session, now: dt.datetime, limit: int = 50) -> list[int]:
    return list(
        session.scalars(
            select(Notification.id)
            .where(Notification.next_attempt_at.is_not(None), Notification.next_attempt_at <= now)
            .order_by(Notification.next_attempt_at, Notification.id)
            .limit(limit)
        )
    )


def claim(*, session: Session, notification_id: int, now: dt.datetime, lease: dt.timedelta) -> Notification | None:
    """Take a due notification for one delivery attempt (its next attempt moves past the lease, so another process
    does not take it meanwhile); None when another process took it first or it is done."""
    taken = session.execute(
        update(Notification)
        .where(
            Notification.id == notification_id,
            Notification.next_attempt_at.is_not(None),
            Notification.next_attempt_at <= now,
        )
        .values(next_attempt_at=now + lease)
    )
    session.commit()
    if not taken.rowcount:  # type: ignore[attr-defined]
        return None
    return session.get(Notification, notification_id, populate_existing=True)


def record_attempt(
    *, session: Session, notification: Notification, error: str | None, now: dt.datetime, retry_in: dt.timedelta
) -> None:
    """The outcome of a delivery attempt: delivered (``error`` None), retried after ``retry_in``, or given up."""
    notification.attempts += 1
    if error is None:
        notification.delivered_at, notification.next_attempt_at = now, None
    else:
        notification.last_error = error[:1000]
        if notification.attempts >= MAX_ATTEMPTS:
            notification.failed_at, notification.next_attempt_at = now, None
        else:
            notification.next_attempt_at = now + retry_in
    session.commit()
