"""Notifications to the challenge's webhooks: delivering the outbox (``storage.webhooks``) with retries and backoff,
the alerts, and the thread of the API process that does both.

Bodies: ``json`` posts the payload itself (JSON-encoded, so any text of the participants' choosing is a JSON
string); ``slack`` posts ``{"text": ...}`` in Slack's mrkdwn, in which such text is escaped (``&``, ``<``, ``>``:
no link, mention or ``<!channel>`` can be smuggled in) and cut to a bound. A receiver that fails or does not answer
within ``TIMEOUT_S`` is tried again after 10 s, 20 s, 40 s, ... (at most an hour, with jitter), up to
``MAX_ATTEMPTS`` times. Delivery runs in a thread of the API process, never in the pipeline: an evaluation's end
only writes a row.

Alerts (only when a webhook takes ``alert`` events): no worker alive while work waits or workers were seen, the
oldest queued evaluation waiting longer than ``Settings.alert_queue_wait_s``, the service's share of the evaluations
that ended within ``Settings.alert_window_s`` above ``Settings.alert_infrastructure_rate``. Each is sent when it
starts, again every ``Settings.alert_repeat_s`` while it holds, and once more when it clears.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import random
import threading
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker

from layersched.server.config import Settings
from layersched.server.models import AlertState, Evaluation, Notification, Webhook, WorkerHeartbeat, utcnow
from layersched.server.storage.webhooks import claim, due_notifications, notify, record_attempt

log = logging.getLogger(__name__)
TIMEOUT_S = 5.0
LEASE = dt.timedelta(seconds=60)  # a claimed delivery not recorded by then (its process died) is due again
SLACK_TEXT_MAX = 300


def backoff(attempts: int, *, jitter: float | None = None) -> dt.timedelta:
    """The wait before the next attempt after ``attempts`` failed ones: 10 s doubling, at most an hour, +-20%."""
    base = min(10.0 * 2 ** max(attempts - 1, 0), 3600.0)
    spread = random.uniform(-0.2, 0.2) if jitter is None else jitter  # timing, not secrecy
    return dt.timedelta(seconds=base * (1 + spread))


def slack_text(text: Any, limit: int = SLACK_TEXT_MAX) -> str:
    """Text for Slack's mrkdwn: control characters dropped, ``& < >`` escaped (Slack's own rule), cut to ``limit``."""
    plain = "".join(c for c in str(text) if unicodedata.category(c) != "Cc")
    if len(plain) > limit:
        plain = plain[: limit - 1] + "…"
    return plain.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _slack_message(payload: dict[str, Any]) -> str:
    event = payload.get("event", "")
    if event.startswith("evaluation."):
        evaluation, submission = payload["evaluation"], payload["submission"]
        who = submission["team"] or submission["owner"]
        head = (
            f"Evaluation #{evaluation['id']} ({evaluation['kind']}) of submission #{submission['id']} "
            f"*{slack_text(submission['name'])}* by {slack_text(who)} in phase {slack_text(submission['phase'])}: "
            f"*{evaluation['state']}*"
        )
        if evaluation["state"] == "failed":
            service = " (the service's fault)" if evaluation["service_failure"] else ""
            return f"{head}, {slack_text(evaluation['category'])}{service}: {slack_text(evaluation['message'] or '')}"
        score = payload.get("public_score")
        return head + (f", public score {score:.4f}" if isinstance(score, int | float) else "")
    if event.startswith("alert."):
        state = ":rotating_light: Alert" if payload.get("state") == "firing" else ":white_check_mark: Resolved"
        return f"{state}: {slack_text(payload.get('message', ''))}"
    return slack_text(payload.get("message", event))


def body(webhook_format: str, payload: dict[str, Any]) -> bytes:
    """The bytes posted to a webhook of ``webhook_format`` for ``payload``."""
    document = {"text": _slack_message(payload)} if webhook_format == "slack" else payload
    return json.dumps(document, ensure_ascii=False, allow_nan=False).encode()


def deliver_due(*, sessions: sessionmaker[Session], http: httpx.Client, now: dt.datetime | None = None) -> int:
    """Try each due notification once; how many were delivered."""
    delivered = 0
    with sessions() as session:
        moment = now or utcnow()
        for notification_id in due_notifications(session=session, now=moment):
            notification = claim(session=session, notification_id=notification_id, now=moment, lease=LEASE)
            if notification is None:
                continue
            webhook = session.get(Webhook, notification.webhook_id)
            if webhook is None:
                continue  # removed meanwhile: its notifications went with it
            error = _post(http, webhook, notification)
            record_attempt(
                session=session,
                notification=notification,
                error=error,
                now=moment if now is not None else utcnow(),  # a slow receiver's attempt ends after ``moment``
                retry_in=backoff(notification.attempts + 1),
            )
            delivered += error is None
    return delivered


def _post(http: httpx.Client, webhook: Webhook, notification: Notification) -> str | None:
    """None when the receiver took it (2xx), else why not, in a line."""
    try:
        response = http.post(
            webhook.url,
            content=body(webhook.format, notification.payload),
            headers={"Content-Type": "application/json", "User-Agent": "layersched-webhook"},
            timeout=TIMEOUT_S,
        )
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}"
    if 200 <= response.status_code < 300:
        return None
    return f"HTTP {response.status_code}: {response.text[:200]}"


# ---------------------------------------------------------------------------------------------------------- alerts


@dataclass(frozen=True)
class Condition:
    kind: str
    holds: bool
    message: str


def conditions(*, session: Session, settings: Settings, now: dt.datetime) -> list[Condition]:
    alive_since = now - dt.timedelta(seconds=settings.worker_alive_s)
    alive = session.scalar(select(func.count(WorkerHeartbeat.id)).where(WorkerHeartbeat.beat_at >= alive_since)) or 0
    seen = session.scalar(select(func.count(WorkerHeartbeat.id))) or 0
    queued, oldest = session.execute(
        select(func.count(Evaluation.id), func.min(Evaluation.created_at)).where(
            Evaluation.state == "queued", Evaluation.kind != "audit"
        )
    ).one()
    waited = (now - oldest).total_seconds() if oldest is not None else 0.0
    window = now - dt.timedelta(seconds=settings.alert_window_s)
    ended, service = session.execute(
        select(
            func.count(Evaluation.id),
            func.count(Evaluation.id).filter(Evaluation.infrastructure_failure.is_(True)),
        ).where(
            Evaluation.kind != "audit",
            Evaluation.state.in_(("succeeded", "failed")),
            Evaluation.finished_at >= window,
        )
    ).one()
    rate = service / ended if ended else 0.0
    return [
        Condition(
            "no_worker",
            alive == 0 and (seen > 0 or queued > 0),
            f"no worker is alive (no heartbeat within {settings.worker_alive_s:g} s); {queued} evaluations wait",
        ),
        Condition(
            "queue_wait",
            waited > settings.alert_queue_wait_s,
            f"the oldest queued evaluation has waited {waited:.0f} s (bound {settings.alert_queue_wait_s:g} s); "
            f"{queued} wait",
        ),
        Condition(
            "infrastructure_failures",
            ended >= settings.alert_min_ended and rate > settings.alert_infrastructure_rate,
            f"{service} of the {ended} evaluations that ended in the last {settings.alert_window_s:g} s failed "
            f"through the service ({rate:.0%}, bound {settings.alert_infrastructure_rate:.0%})",
        ),
    ]


def check_alerts(*, session: Session, settings: Settings, now: dt.datetime | None = None) -> list[str]:
    """Send what the alerts' states call for (see the module docstring); the events sent. Conditional updates make
    one process of several send each."""
    now = now or utcnow()
    if not any("alert" in w.events for w in session.scalars(select(Webhook))):
        return []
    sent = []
    repeat_before = now - dt.timedelta(seconds=settings.alert_repeat_s)
    for condition in conditions(session=session, settings=settings, now=now):
        if session.scalar(select(AlertState.id).where(AlertState.kind == condition.kind)) is None:
            session.add(AlertState(kind=condition.kind, active=False))
            session.commit()
        row = AlertState.kind == condition.kind
        if condition.holds:
            due = row & (AlertState.active.is_(False) | (AlertState.last_sent_at < repeat_before))
            values: dict[str, Any] = {"active": True, "last_sent_at": now}
            changed = session.execute(update(AlertState).where(due).values(**values))
            state = "firing"
        else:
            changed = session.execute(update(AlertState).where(row, AlertState.active.is_(True)).values(active=False))
            state = "resolved"
        if changed.rowcount:  # type: ignore[attr-defined]
            payload = {
                "event": f"alert.{condition.kind}",
                "state": state,
                "message": condition.message,
                "at": now.astimezone(dt.timezone.utc).isoformat(),
            }
            notify(session, event=f"alert.{condition.kind}", payload=payload, now=now)
            sent.append(f"alert.{condition.kind}:{state}")
        session.commit()
    return sent


class Notifier(threading.Thread):
    """Every ``Settings.notify_interval_s``: the alerts, then the due deliveries. Runs in the API process."""

    def __init__(
        self, *, sessions: sessionmaker[Session], settings: Settings, http: Callable[[], httpx.Client] = httpx.Client
    ) -> None:
        super().__init__(name="layersched-notifier", daemon=True)
        self.sessions, self.settings = sessions, settings
        self._http = http()
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.settings.notify_interval_s):
            try:
                with self.sessions() as session:
                    if session.scalar(select(Webhook.id).limit(1)) is None:
                        continue  # nothing to tell anyone
                    check_alerts(session=session, settings=self.settings)
                deliver_due(sessions=self.sessions, http=self._http)
            except Exception:  # the notifier must outlive a database hiccup; the failure is logged in full
                log.exception("notifier pass failed; trying again in %s s", self.settings.notify_interval_s)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=TIMEOUT_S + 5)
        self._http.close()
