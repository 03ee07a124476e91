"""The organisers' routes for accounts (``/admin/users...``): a roster at once, the users' list, disable and enable,
one-time sign-in links."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from layersched.sdk.api.decoding import decode, decode_page
from layersched.sdk.api.organiser_responses import LinkCreated, RosterImported, UserDisabled, UserListed
from layersched.sdk.api.responses import Page
from layersched.sdk.api.transport import Transport


class UsersApi(Transport):
    def admin_import_roster(self, rows: list[dict[str, Any]], *, links: bool = False) -> RosterImported:
        """Create the roster's users and teams in one transaction (``read_roster`` gives ``rows``)."""
        raw = self._request("POST", "/admin/users/import", json={"rows": rows, "links": links})
        return decode(RosterImported, raw, "roster")

    def admin_users(
        self, *, role: str | None = None, team: str | None = None, disabled: bool | None = None
    ) -> Page[UserListed]:
        params: dict[str, Any] = {"role": role, "team": team}
        if disabled is not None:
            params["disabled"] = "true" if disabled else "false"
        raw = self._request("GET", "/admin/users", params={k: v for k, v in params.items() if v is not None})
        return decode_page(raw, UserListed, "users")

    def admin_disable_user(self, name: str, *, reason: str = "") -> UserDisabled:
        raw = self._request("POST", f"/admin/users/{quote(name, safe='')}/disable", json={"reason": reason})
        return decode(UserDisabled, raw, "disabled user")

    def admin_enable_user(self, name: str) -> UserListed:
        return decode(UserListed, self._request("POST", f"/admin/users/{quote(name, safe='')}/enable"), "user")

    def admin_user_link(self, name: str) -> LinkCreated:
        return decode(LinkCreated, self._request("POST", f"/admin/users/{quote(name, safe='')}/links"), "link")
