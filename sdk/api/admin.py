"""The organisers' routes (``/admin``, as ``server/routes/admin.py`` holds them): users and tokens, reruns and
audits, cancel and disqualify, boards' freeze and publication, phases, teams, evaluation sets, the audit log.
Each needs an organiser's token."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from layersched.sdk.api.decoding import decode, decode_page
from layersched.sdk.api.responses import (
    AuditLogEntry,
    CreatedToken,
    CreatedUser,
    Evaluation,
    EvaluationDetail,
    LeaderboardState,
    Page,
    PhaseInfo,
    Team,
)
from layersched.sdk.api.transport import Transport, poll


class AdminApi(Transport):
    """Every ``admin_*`` method: the organisers' API."""

    def admin_create_user(self, *, name: str, email: str, role: str = "participant") -> CreatedUser:
        raw = self._request("POST", "/admin/users", json={"name": name, "email": email, "role": role})
        return decode(CreatedUser, raw, "created user")

    def admin_create_token(self, user_id: int) -> CreatedToken:
        return decode(CreatedToken, self._request("POST", f"/admin/users/{user_id}/tokens"), "created token")

    def admin_revoke_token(self, token_id: int) -> None:
        self._request("DELETE", f"/admin/tokens/{token_id}")

    def admin_rerun(self, submission_id: int, *, evalset: str | None = None) -> Evaluation:
        raw = self._request("POST", f"/admin/submissions/{submission_id}/rerun", json={"evalset": evalset})
        return decode(Evaluation, raw, "evaluation")

    def admin_audit(self, submission_id: int, *, sample: int | None = None) -> Evaluation:
        raw = self._request("POST", f"/admin/submissions/{submission_id}/audit", json={"sample": sample})
        return decode(Evaluation, raw, "evaluation")

    def admin_cancel(self, submission_id: int) -> None:
        self._request("POST", f"/admin/submissions/{submission_id}/cancel")

    def admin_disqualify(self, submission_id: int, *, reason: str) -> None:
        self._request("POST", f"/admin/submissions/{submission_id}/disqualify", json={"reason": reason})

    def admin_freeze(self, frozen: bool = True, *, phase: str | None = None) -> LeaderboardState:
        raw = self._request("POST", "/admin/leaderboard/freeze", params=_phase_param(phase), json={"frozen": frozen})
        return decode(LeaderboardState, raw, "leaderboard state")

    def admin_publish(self, *, phase: str | None = None) -> LeaderboardState:
        raw = self._request("POST", "/admin/leaderboard/publish", params=_phase_param(phase))
        return decode(LeaderboardState, raw, "leaderboard state")

    def admin_create_phase(
        self,
        *,
        name: str,
        evalset: str,
        title: str = "",
        opens_at: str | None = None,
        closes_at: str | None = None,
        daily_quota: int | None = None,
        visibility: str = "public",
    ) -> PhaseInfo:
        """A new phase on the registered set ``evalset``; times are ISO 8601 with an offset (None: now, and
        open-ended), ``daily_quota`` None is the server's default."""
        body = {
            "name": name,
            "evalset": evalset,
            "title": title,
            "opens_at": opens_at,
            "closes_at": closes_at,
            "daily_quota": daily_quota,
            "visibility": visibility,
        }
        return decode(PhaseInfo, self._request("POST", "/admin/phases", json=body), "phase")

    def admin_edit_phase(self, name: str, **changes: Any) -> PhaseInfo:
        """Change the fields named (``title``, ``opens_at``, ``closes_at``, ``daily_quota``, ``visibility``); a field
        given as None means open-ended for ``closes_at``, the server's quota for ``daily_quota``."""
        raw = self._request("PATCH", f"/admin/phases/{_path(name)}", json=changes)
        return decode(PhaseInfo, raw, "phase")

    def admin_open_phase(self, name: str) -> PhaseInfo:
        return decode(PhaseInfo, self._request("POST", f"/admin/phases/{_path(name)}/open"), "phase")

    def admin_close_phase(self, name: str, *, at: str | None = None) -> PhaseInfo:
        raw = self._request("POST", f"/admin/phases/{_path(name)}/close", json={"at": at})
        return decode(PhaseInfo, raw, "phase")

    def admin_create_team(self, name: str) -> Team:
        return decode(Team, self._request("POST", "/admin/teams", json={"name": name}), "team")

    def admin_assign(self, team: str, user: str) -> Team:
        raw = self._request("POST", f"/admin/teams/{_path(team)}/members", json={"user": user})
        return decode(Team, raw, "team")

    def admin_remove(self, team: str, user: str) -> Team:
        return decode(Team, self._request("DELETE", f"/admin/teams/{_path(team)}/members/{_path(user)}"), "team")

    def admin_reveal_evalset(self, name: str, *, force: bool = False) -> None:
        """Mark the set revealed; ``force``: even while a phase on it is open and its private board unpublished."""
        self._request("POST", f"/admin/evalsets/{name}/reveal", json={"force": True} if force else None)

    def admin_audit_log(self, *, offset: int = 0, limit: int = 50) -> Page[AuditLogEntry]:
        raw = self._request("GET", "/admin/audit-log", params={"offset": offset, "limit": limit})
        return decode_page(raw, AuditLogEntry, "audit log")

    def admin_evaluation(self, evaluation_id: int) -> EvaluationDetail:
        raw = self._request("GET", f"/admin/evaluations/{evaluation_id}")
        return decode(EvaluationDetail, raw, "evaluation")

    def admin_wait_evaluation(
        self,
        evaluation_id: int,
        *,
        on_update: Callable[[EvaluationDetail], None] | None = None,
        poll_interval: float = 2.0,
        timeout: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> EvaluationDetail:
        """Poll an evaluation (rerun or audit) until it ends."""
        return poll(lambda: self.admin_evaluation(evaluation_id), on_update, poll_interval, timeout, sleep, self.server)


def _phase_param(phase: str | None) -> dict[str, str] | None:
    return {"phase": phase} if phase is not None else None


def _path(segment: str) -> str:
    return quote(segment, safe="")
