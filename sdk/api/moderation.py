"""Bulk moderation (``/admin/bulk/rerun``, ``/admin/bulk/disqualify``): several submissions by id or by filter."""

from __future__ import annotations

from typing import Any

from layersched.sdk.api.decoding import decode
from layersched.sdk.api.organiser_responses import BulkResult
from layersched.sdk.api.transport import Transport
from layersched.sdk.api.views import Filter


def _choice(ids: list[int] | None, chosen: Filter | None, dry_run: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"dry_run": dry_run}
    if ids:
        body["ids"] = ids
    if chosen is not None:
        body["filter"] = chosen.params()
    return body


class ModerationApi(Transport):
    def admin_bulk_rerun(
        self,
        *,
        ids: list[int] | None = None,
        chosen: Filter | None = None,
        evalset: str | None = None,
        dry_run: bool = False,
    ) -> BulkResult:
        """Rerun the submissions of ``ids``, or those ``chosen`` matches; ``dry_run`` only lists them."""
        body = {**_choice(ids, chosen, dry_run), "evalset": evalset}
        return decode(BulkResult, self._request("POST", "/admin/bulk/rerun", json=body), "bulk rerun")

    def admin_bulk_disqualify(
        self, *, reason: str, ids: list[int] | None = None, chosen: Filter | None = None, dry_run: bool = False
    ) -> BulkResult:
        body = {**_choice(ids, chosen, dry_run), "reason": reason}
        return decode(BulkResult, self._request("POST", "/admin/bulk/disqualify", json=body), "bulk disqualify")
