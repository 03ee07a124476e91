"""What the challenge shows everyone: its phases (``/phases``), their leaderboards (``/leaderboard``) and the current
evaluation set (``/evalsets/current``)."""

from __future__ import annotations

from layersched.sdk.api.decoding import decode, decode_page
from layersched.sdk.api.responses import EvalSetInfo, Leaderboard, PhaseInfo
from layersched.sdk.api.transport import Transport


class PhasesApi(Transport):
    """The phases, their boards and the current set."""

    def phases(self) -> list[PhaseInfo]:
        """The challenge's phases (``GET /phases``), in the order they open."""
        return decode_page(self._request("GET", "/phases"), PhaseInfo, "phases").data

    def leaderboard(self, split: str = "public", phase: str | None = None) -> Leaderboard:
        """A phase's board (None: the open phase's, as the server chooses)."""
        params = {"split": split, **({"phase": phase} if phase is not None else {})}
        return decode(Leaderboard, self._request("GET", "/leaderboard", params=params), "leaderboard")

    def current_evalset(self) -> EvalSetInfo:
        return decode(EvalSetInfo, self._request("GET", "/evalsets/current"), "evalset")
