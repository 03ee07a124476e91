"""What the organisers' routes for running a term answer (docs/API.md, issue 32), as frozen dataclasses: the roster
and the users' list, submissions' views, bulk moderation, quota grants, webhooks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Enrolled:
    """A user a roster created, with a token or a one-time sign-in link (shown once)."""

    name: str
    email: str
    role: str
    team: str | None = None
    token: str | None = None
    link: str | None = None
    link_expires_at: str | None = None


@dataclass(frozen=True)
class RosterImported:
    created: list[Enrolled]
    existing: list[str]
    teams_created: list[str]
    assigned: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class UserListed:
    id: int
    name: str
    email: str
    role: str
    created_at: str
    tokens_active: int
    team: str | None = None
    last_submission_at: str | None = None
    disabled_at: str | None = None


@dataclass(frozen=True)
class UserDisabled:
    user: UserListed
    tokens_revoked: int


@dataclass(frozen=True)
class LinkCreated:
    user: str
    link: str
    expires_at: str


@dataclass(frozen=True)
class SubmissionRow:
    """A submission as ``GET /admin/submissions`` lists it (state, category and times of its primary evaluation)."""

    id: int
    name: str
    owner: str
    phase: str
    state: str
    created_at: str
    service_failure: bool
    team: str | None = None
    category: str | None = None
    disqualified: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    wait_s: float | None = None
    run_s: float | None = None
    score: float | None = None


@dataclass(frozen=True)
class SubmissionsSummary:
    states: dict[str, int]
    failures: dict[str, int]


@dataclass(frozen=True)
class SubmissionRows:
    data: list[SubmissionRow]
    count: int
    summary: SubmissionsSummary


@dataclass(frozen=True)
class QuotaGrant:
    """Extra submissions for ``to`` (a user or a team: ``kind``) in ``phase`` on ``day``."""

    id: int
    phase: str
    to: str
    kind: str
    extra: int
    day: str
    reason: str
    created_at: str


@dataclass(frozen=True)
class BulkResult:
    """What a bulk action chose (``submissions``, as they were) and did: reruns queued, submissions skipped."""

    dry_run: bool
    count: int
    submissions: list[SubmissionRow]
    evaluations: list[int] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class WebhookInfo:
    """A webhook and how its notifications went: pending (retried with backoff), delivered, given up."""

    id: int
    url: str
    format: str
    events: list[str]
    created_at: str
    pending: int
    delivered: int
    failed: int
    last_error: str | None = None
