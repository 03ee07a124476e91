"""Request and response bodies of the organisers' routes for running a term (issue 32): the roster and the users'
list, submissions' views and bulk moderation, quota grants, webhooks and the analytics (docs/API.md)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from layersched.server.deps import MAX_ROW_ID
from layersched.server.schemas import NO_NUL, Role, State
from layersched.server.storage.moderation import MAX_BULK
from layersched.server.storage.submission_views import SERVICE_FAILURES, SubmissionFilter

# Long enough for any bad value to reach the roster's own checks, which name its line; short enough to bound a body.
_CELL = 1000


class RosterLine(BaseModel):
    """One line of a roster file, with its number in the file (errors name it)."""

    line: int = Field(ge=1, le=1_000_000)
    name: str = Field(max_length=_CELL, pattern=NO_NUL)
    email: str = Field(max_length=_CELL, pattern=NO_NUL)
    team: str | None = Field(default=None, max_length=_CELL, pattern=NO_NUL)
    role: str = Field(default="participant", max_length=_CELL, pattern=NO_NUL)


class RosterImport(BaseModel):
    rows: list[RosterLine] = Field(max_length=5000)
    links: bool = Field(default=False, description="give each new user a one-time sign-in link instead of a token")


class Enrolled(BaseModel):
    name: str
    email: str
    role: Role
    team: str | None
    token: str | None  # shown once; None with links
    link: str | None  # the one-time sign-in link, shown once; None without links
    link_expires_at: dt.datetime | None


class RosterImported(BaseModel):
    created: list[Enrolled]
    existing: list[str]  # users of the file already there, unchanged
    teams_created: list[str]
    assigned: list[dict[str, str]]  # {"user", "team"}: users already there put into a team


class UserListed(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    email: str
    role: Role
    team: str | None
    created_at: dt.datetime
    last_submission_at: dt.datetime | None
    tokens_active: int
    disabled_at: dt.datetime | None


class UsersListed(BaseModel):
    data: list[UserListed]
    count: int


class DisableRequest(BaseModel):
    reason: str = Field(default="", max_length=2000, pattern=NO_NUL)


class UserDisabled(BaseModel):
    user: UserListed
    tokens_revoked: int


class LinkCreated(BaseModel):
    user: str
    link: str  # shown once
    expires_at: dt.datetime


Format = Literal["csv", "json"]


class SubmissionRowPublic(BaseModel):
    """A submission as the organisers' view lists it: the state, category and times are its primary evaluation's."""

    id: int
    name: str
    owner: str
    team: str | None
    phase: str
    state: State
    category: str | None
    service_failure: bool  # the service's fault (never counted against the quota)
    disqualified: str | None
    created_at: dt.datetime
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    wait_s: float | None  # from the upload to the start (until now while queued)
    run_s: float | None  # from the start to the end (until now while running)
    score: float | None  # public overall


class SubmissionsSummary(BaseModel):
    states: dict[str, int]
    failures: dict[str, int]  # failed ones by category; "infrastructure_error": the service's failures, any category


class SubmissionRows(BaseModel):
    data: list[SubmissionRowPublic]
    count: int
    summary: SubmissionsSummary


class QuotaGrantCreate(BaseModel):
    """Extra submissions for a participant (``user``) or a team (``team``): exactly one of them."""

    phase: str = Field(min_length=1, max_length=50, pattern=NO_NUL)
    user: str | None = Field(default=None, min_length=1, max_length=100, pattern=NO_NUL)
    team: str | None = Field(default=None, min_length=1, max_length=100, pattern=NO_NUL)
    extra: int = Field(ge=1, le=1000, description="extra submissions on that day")
    day: dt.date | None = Field(default=None, description="the UTC day (default: today)")
    reason: str = Field(default="", max_length=2000, pattern=NO_NUL)

    @model_validator(mode="after")
    def _one_target(self) -> QuotaGrantCreate:
        if self.user is None and self.team is None:
            raise ValueError("a grant needs a user or a team to go to; neither was given")
        if self.user is not None and self.team is not None:
            raise ValueError(
                f"a grant goes to a user or a team, not both (got user {self.user!r} and team {self.team!r})"
            )
        return self


class QuotaGrantPublic(BaseModel):
    id: int
    phase: str
    to: str  # the user's or the team's name
    kind: Literal["user", "team"]
    extra: int
    day: dt.date
    reason: str
    created_at: dt.datetime


class QuotaGrantsPublic(BaseModel):
    data: list[QuotaGrantPublic]
    count: int


class FilterQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    phase: str | None = Field(default=None, min_length=1, max_length=50, pattern=NO_NUL, description="a phase's name")
    state: State | None = Field(default=None, description="the state of the primary evaluation")
    owner: str | None = Field(default=None, min_length=1, max_length=100, pattern=NO_NUL, description="a user's name")
    team: str | None = Field(default=None, min_length=1, max_length=100, pattern=NO_NUL, description="a team's name")
    category: str | None = Field(
        default=None,
        min_length=1,
        max_length=50,
        pattern=NO_NUL,
        description=f"a failure category (timeout, crash, ...); {SERVICE_FAILURES!r}: every failure of the service",
    )
    since: AwareDatetime | None = Field(default=None, description="uploaded at or after (ISO 8601 with its zone)")

    def chosen(self) -> SubmissionFilter:
        return SubmissionFilter(**self.model_dump())


class BulkChoice(BaseModel):
    """Which submissions a bulk action is for: ``ids``, or those ``filter`` matches (at least one criterion)."""

    ids: list[Annotated[int, Field(ge=1, le=MAX_ROW_ID)]] = Field(default_factory=list, max_length=MAX_BULK)
    filter: FilterQuery | None = None
    dry_run: bool = Field(default=False, description="list what the action would touch, and touch nothing")

    @model_validator(mode="after")
    def _something(self) -> BulkChoice:
        if self.ids and self.filter is not None:
            raise ValueError("name submissions by ids or by a filter, not both")
        if not self.ids and (self.filter is None or self.filter.chosen() == SubmissionFilter()):
            raise ValueError(
                "name submissions by ids or by a filter with at least one criterion (an empty filter "
                "would be every submission)"
            )
        return self


class BulkRerun(BulkChoice):
    evalset: str | None = Field(default=None, min_length=1, max_length=100, pattern=NO_NUL)


class BulkDisqualify(BulkChoice):
    reason: str = Field(min_length=1, max_length=2000, pattern=NO_NUL)


class Skipped(BaseModel):
    id: int
    why: str


class BulkResult(BaseModel):
    dry_run: bool
    count: int  # submissions chosen
    submissions: list[SubmissionRowPublic]  # as they were before the action
    evaluations: list[int]  # the reruns queued
    skipped: list[Skipped]


class DayTimingPublic(BaseModel):
    day: str
    evaluations: int  # started that day
    wait_p50: float | None
    wait_p95: float | None
    run_p50: float | None
    run_p95: float | None


class FailurePublic(BaseModel):
    category: str
    count: int
    rate: float


class WorkerPublic(BaseModel):
    worker_id: str
    started_at: dt.datetime
    beat_at: dt.datetime
    alive: bool


class AnalyticsPublic(BaseModel):
    """The analytics page's figures over the last ``days`` UTC days (evaluations but audits)."""

    days: list[str]
    phases: list[str]
    submissions: dict[str, dict[str, int]]  # day -> phase -> submissions made
    ended: int  # evaluations that ended in the window
    failures: list[FailurePublic]  # by category, with their rate among those that ended
    service_failures: int
    timing: list[DayTimingPublic]
    queued: int
    running: int
    oldest_queued_s: float | None
    broker_queues: dict[str, int] | None  # messages waiting in each broker queue; None: the broker did not answer
    workers: list[WorkerPublic]
    best: dict[str, list[tuple[str, float | None]]]  # phase -> (day, best public score made by then)


Event = Literal["evaluation", "alert"]
EVENT_KINDS: tuple[Event, ...] = ("evaluation", "alert")


class WebhookCreate(BaseModel):
    url: str = Field(min_length=1, max_length=2000, pattern=NO_NUL, description="http(s) URL that takes a POST")
    format: Literal["json", "slack"] = Field(default="json", description="json: the payload; slack: {'text': ...}")
    events: list[Event] = Field(default_factory=lambda: list(EVENT_KINDS), min_length=1)


class WebhookPublic(BaseModel):
    id: int
    url: str
    format: str
    events: list[str]
    created_at: dt.datetime
    pending: int  # notifications not delivered yet (retried with backoff)
    delivered: int
    failed: int  # given up after every attempt
    last_error: str | None


class WebhooksPublic(BaseModel):
    data: list[WebhookPublic]
    count: int
