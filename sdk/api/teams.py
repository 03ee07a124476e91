"""Teams (``/teams``): the participants' side of forming, joining and leaving one (the organisers' side is
``layersched.sdk.api.admin``)."""

from __future__ import annotations

from layersched.sdk.api.decoding import decode, decode_page
from layersched.sdk.api.responses import Invite, Page, Team
from layersched.sdk.api.transport import Transport


class TeamsApi(Transport):
    """A participant's team: list, show, create, invite, join, leave."""

    def teams(self, *, offset: int = 0, limit: int = 50) -> Page[Team]:
        """A page of the teams and their members, oldest first, and how many there are (``GET /teams``)."""
        return decode_page(self._request("GET", "/teams", params={"offset": offset, "limit": limit}), Team, "teams")

    def my_team(self) -> Team:
        """The caller's team (``GET /teams/mine``); ``NotFound`` when they are in none."""
        return decode(Team, self._request("GET", "/teams/mine"), "team")

    def create_team(self, name: str) -> Team:
        return decode(Team, self._request("POST", "/teams", json={"name": name}), "team")

    def invite(self) -> Invite:
        """A new one-use invite code to the caller's team."""
        return decode(Invite, self._request("POST", "/teams/mine/invites"), "invite")

    def join_team(self, code: str) -> Team:
        return decode(Team, self._request("POST", "/teams/join", json={"code": code}), "team")

    def leave_team(self) -> Team:
        """Leave the caller's team; the team as it is after."""
        return decode(Team, self._request("POST", "/teams/mine/leave"), "team")
