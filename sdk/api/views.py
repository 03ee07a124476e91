"""The organisers' filtered view of submissions (``GET /admin/submissions``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from layersched.sdk.api.decoding import decode
from layersched.sdk.api.organiser_responses import SubmissionRows
from layersched.sdk.api.transport import Transport


@dataclass(frozen=True)
class Filter:
    """Which submissions (None: any): ``category`` ``infrastructure_error`` means every failure of the service."""

    phase: str | None = None
    state: str | None = None
    owner: str | None = None
    team: str | None = None
    category: str | None = None
    since: str | None = None  # ISO 8601 with its offset

    def params(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


class ViewsApi(Transport):
    def admin_submissions(self, chosen: Filter | None = None, *, offset: int = 0, limit: int = 50) -> SubmissionRows:
        params = {**(chosen or Filter()).params(), "offset": offset, "limit": limit}
        return decode(SubmissionRows, self._request("GET", "/admin/submissions", params=params), "submissions")
