"""``/admin/webhooks``: where the challenge's notifications go (an evaluation's end, the alerts), per challenge (this
server). Delivery is ``server/notifications.py``'s."""

from __future__ import annotations

from fastapi import APIRouter, Response

from layersched.server.deps import Organiser, RowId, SessionDep
from layersched.server.errors import NotFound
from layersched.server.models import Webhook, utcnow
from layersched.server.organiser_schemas import WebhookCreate, WebhookPublic, WebhooksPublic
from layersched.server.storage.webhooks import WebhookStats, add_webhook, list_webhooks, notify, remove_webhook

router = APIRouter(prefix="/admin/webhooks", tags=["organisers"])


def _public(stats: WebhookStats) -> WebhookPublic:
    w = stats.webhook
    return WebhookPublic(
        id=w.id,
        url=w.url,
        format=w.format,
        events=list(w.events),
        created_at=w.created_at,
        pending=stats.pending,
        delivered=stats.delivered,
        failed=stats.failed,
        last_error=stats.last_error,
    )


@router.post("", status_code=201, response_model=WebhookPublic)
def create_webhook(session: SessionDep, actor: Organiser, body: WebhookCreate) -> WebhookPublic:
    """A webhook for ``events`` (422 naming a URL that is not http(s) with a host)."""
    webhook = add_webhook(session=session, url=body.url, format=body.format, events=list(body.events), actor=actor)
    return _public(WebhookStats(webhook, 0, 0, 0, None))


@router.get("", response_model=WebhooksPublic)
def read_webhooks(session: SessionDep, _actor: Organiser) -> WebhooksPublic:
    rows = [_public(s) for s in list_webhooks(session=session)]
    return WebhooksPublic(data=rows, count=len(rows))


@router.delete("/{webhook_id}", status_code=204, response_class=Response)
def delete_webhook(session: SessionDep, actor: Organiser, webhook_id: RowId) -> Response:
    remove_webhook(session=session, webhook_id=webhook_id, actor=actor)
    return Response(status_code=204)


@router.post("/{webhook_id}/test", status_code=202, response_model=WebhookPublic)
def test_webhook(session: SessionDep, _actor: Organiser, webhook_id: RowId) -> WebhookPublic:
    """Queue a test notification to this webhook (delivered as the others are, within the notifier's interval)."""
    if session.get(Webhook, webhook_id) is None:
        raise NotFound(f"webhook {webhook_id} does not exist")
    now = utcnow()
    payload = {"event": "test", "message": "a test notification from layersched", "at": now.isoformat()}
    notify(session, event="test", payload=payload, now=now, only=webhook_id)
    session.commit()
    return next(_public(s) for s in list_webhooks(session=session) if s.webhook.id == webhook_id)
