"""Quota grants (``/admin/quota/grants``): extra submissions for a participant or a team in a phase on a day."""

from __future__ import annotations

from typing import Any

from layersched.sdk.api.decoding import decode, decode_page
from layersched.sdk.api.organiser_responses import QuotaGrant
from layersched.sdk.api.responses import Page
from layersched.sdk.api.transport import Transport


class QuotaApi(Transport):
    def admin_grant_quota(
        self,
        *,
        phase: str,
        extra: int,
        user: str | None = None,
        team: str | None = None,
        day: str | None = None,
        reason: str = "",
    ) -> QuotaGrant:
        """Grant ``extra`` submissions in ``phase`` on ``day`` (YYYY-MM-DD, default today, UTC) to a user or a team."""
        body: dict[str, Any] = {"phase": phase, "extra": extra, "user": user, "team": team, "reason": reason}
        if day is not None:
            body["day"] = day
        return decode(QuotaGrant, self._request("POST", "/admin/quota/grants", json=body), "grant")

    def admin_quota_grants(self, *, phase: str | None = None) -> Page[QuotaGrant]:
        params = {"phase": phase} if phase is not None else None
        return decode_page(self._request("GET", "/admin/quota/grants", params=params), QuotaGrant, "grants")
