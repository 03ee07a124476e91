"""The challenge's webhooks (``/admin/webhooks``): an evaluation's end and the alerts, as JSON or Slack text."""

from __future__ import annotations

from layersched.sdk.api.decoding import decode, decode_page
from layersched.sdk.api.organiser_responses import WebhookInfo
from layersched.sdk.api.responses import Page
from layersched.sdk.api.transport import Transport


class WebhooksApi(Transport):
    def admin_add_webhook(self, url: str, *, format: str = "json", events: list[str] | None = None) -> WebhookInfo:
        body = {"url": url, "format": format, "events": events or ["evaluation", "alert"]}
        return decode(WebhookInfo, self._request("POST", "/admin/webhooks", json=body), "webhook")

    def admin_webhooks(self) -> Page[WebhookInfo]:
        return decode_page(self._request("GET", "/admin/webhooks"), WebhookInfo, "webhooks")

    def admin_remove_webhook(self, webhook_id: int) -> None:
        self._request("DELETE", f"/admin/webhooks/{webhook_id}")

    def admin_test_webhook(self, webhook_id: int) -> WebhookInfo:
        return decode(WebhookInfo, self._request("POST", f"/admin/webhooks/{webhook_id}/test"), "webhook")
