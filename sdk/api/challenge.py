"""The challenge as one document (``/admin/challenge``): exported as the server holds it, applied (or planned with a
dry run). Organisers only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from layersched.sdk.api.decoding import decode
from layersched.sdk.api.transport import Transport


@dataclass(frozen=True)
class ChallengePlan:
    """What applying a challenge changes (in words, in order), what it leaves alone, and whether it was applied."""

    changes: list[str]
    notes: list[str]
    applied: bool


class ChallengeApi(Transport):
    def admin_export_challenge(self) -> dict[str, Any]:
        """The server's rules and phases as ``{"rules": {...}, "phases": [...]}`` (docs/API.md)."""
        raw = self._request("GET", "/admin/challenge")
        return decode(dict[str, Any], raw, "challenge")

    def admin_apply_challenge(self, challenge: dict[str, Any], *, dry_run: bool = False) -> ChallengePlan:
        """Bring the server to ``challenge`` (the body of ``PUT /admin/challenge``); ``dry_run``: only plan."""
        raw = self._request("PUT", "/admin/challenge", json=challenge, params={"dry_run": str(dry_run).lower()})
        return decode(ChallengePlan, raw, "challenge plan")
