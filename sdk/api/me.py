"""The caller's account (``/me``): who the token belongs to, and whether an upload would be accepted now."""

from __future__ import annotations

from layersched.sdk.api.decoding import decode
from layersched.sdk.api.responses import Allowance, Me
from layersched.sdk.api.transport import Transport


class MeApi(Transport):
    """``GET /me`` and ``GET /me/allowance``."""

    def me(self) -> Me:
        return decode(Me, self._request("GET", "/me"), "me")

    def allowance(self, phase: str | None = None) -> Allowance:
        """Whether an upload (to ``phase``; None: the only open one) would be accepted now (``GET /me/allowance``);
        a wrong token fails here (``AuthError``)."""
        params = {"phase": phase} if phase is not None else None
        return decode(Allowance, self._request("GET", "/me/allowance", params=params), "allowance")
