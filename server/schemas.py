"""Request and response bodies of the HTTP API (docs/API.md), one family per resource."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, model_validator

from layersched.server.models import NAME_LENGTH
from layersched.server.name_rules import DISPLAY_NAME, visible_name

Role = Literal["participant", "organiser"]
State = Literal["queued", "running", "succeeded", "failed", "cancelled"]
# PostgreSQL refuses NUL in text values (a 500 if one reaches it): every free-text input takes this pattern.
NO_NUL = r"^[^\x00]*$"
# A name others read (name_rules): visible text only, refused naming the first character that is not. Put after the
# field's constraints in ``Annotated``: it then wraps them, so it runs first and the message names the character.
VisibleName = BeforeValidator(visible_name)
# A participant's or a team's name: the boards show it as a competitor's.
DisplayName = Annotated[str, Field(min_length=1, max_length=NAME_LENGTH, pattern=DISPLAY_NAME), VisibleName]


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail


class Progress(BaseModel):
    done: int
    total: int


class ErrorInfo(BaseModel):
    category: str
    message: str


class Score(BaseModel):
    overall: float
    ci_low: float
    ci_high: float
    per_scenario: dict[str, float]


class AuditVerdict(BaseModel):
    verdict: Literal["match", "mismatch"]
    mismatches: list[str]


# --------------------------------------------------------------------------------------------------------- users


class UserPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    email: str
    role: Role


class MePublic(UserPublic):
    submissions_today: int  # the user's team's, when they are in one: a team shares one quota
    daily_quota: int
    team: str | None = None  # the user's team now (None: they compete alone)


EMAIL = r"^[^@\s\x00]+@[^@\s\x00]+$"


class UserCreate(BaseModel):
    name: DisplayName
    email: str = Field(min_length=3, max_length=254, pattern=EMAIL)
    role: Role = "participant"


class UserCreated(BaseModel):
    user: UserPublic
    token: str


class TokenCreated(BaseModel):
    id: int
    token: str


# ----------------------------------------------------------------------------------------------------- submissions


class EvaluationPublic(BaseModel):
    id: int
    kind: Literal["initial", "rerun", "audit"]
    state: State
    evalset_name: str
    evalset_commitment: str
    sim_version: str | None
    image_digest: str | None
    bundle_sha256: str
    sandbox: str | None
    created_at: dt.datetime
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    attempts: int
    progress: Progress
    error: ErrorInfo | None
    audit_of: int | None
    audit: AuditVerdict | None


class QueuePlacePublic(BaseModel):
    """Where a queued submission stands: 1 is next to start. The estimates come from recent run times on its set and
    the workers alive; None when there are too few recent runs to tell."""

    position: int
    queued: int
    workers: int
    starts_in_s: float | None
    done_in_s: float | None


class SubmissionPublic(BaseModel):
    id: int
    phase: str
    name: str
    description: str
    owner: str
    created_at: dt.datetime
    bundle_sha256: str
    state: State
    disqualified: str | None
    progress: Progress
    error: ErrorInfo | None
    score: Score | None
    rank: int | None
    selected: bool
    evaluations: list[EvaluationPublic]
    # Under the Ladder, whether ``score`` is this submission's own public score (True) or its owner's best shown
    # score, which this one did not beat by more than the step (False); None when the Ladder plays no part.
    score_revealed: bool | None = None
    queue: QueuePlacePublic | None = None  # while its evaluation is queued


class SubmissionsPublic(BaseModel):
    data: list[SubmissionPublic]
    count: int


class EpisodeLog(BaseModel):
    scenario: str
    episode: str
    hidden: bool
    status: str
    step: int | None
    message: str
    stdout: str | None
    stderr: str | None


class SubmissionLogs(BaseModel):
    data: list[EpisodeLog]


class EpisodePublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    scenario: str
    episode_id: str
    split: str
    hidden: bool
    status: str
    message: str
    # As the episode's track names them (layers-v1: mean_completion, p95_completion, cloud_share); primary_value is
    # the one scores are ratios of. None: the episode did not finish.
    metrics: dict[str, float] | None
    primary_value: float | None
    trace_hash: str | None
    n_actions: int


class EvaluationDetail(EvaluationPublic):
    submission_id: int
    worker_id: str | None
    heartbeat_at: dt.datetime | None
    infrastructure_failure: bool
    score_public: Score | None
    score_private: Score | None
    episodes: list[EpisodePublic]


# ----------------------------------------------------------------------------------------------------- leaderboard


class LeaderboardRow(BaseModel):
    rank: int | None
    participant: str  # the team's name for a team's row, the participant's for one competing alone
    submission_id: int | None
    submission_name: str
    score: float
    ci_low: float
    ci_high: float
    per_scenario: dict[str, float]
    submissions: int
    submitted_at: dt.datetime
    baseline: bool
    members: list[str] = []  # a team's members now, in the order they joined; empty for anyone else
    # Each of the track's metrics, its mean over the split's episodes, of the row's shown submission (under the
    # Ladder, the one whose score it shows); empty for a score recorded before boards showed them.
    metrics: dict[str, float] = {}


class TrackDescribed(BaseModel):
    """Which problem a set or board is: its track's id and title, and the baseline its scores are ratios to."""

    track: str
    track_title: str
    reference_baseline: str


class Leaderboard(TrackDescribed):
    phase: str
    split: Literal["public", "private"]
    frozen: bool
    published: bool
    rows: list[LeaderboardRow]


class LeaderboardStatePublic(BaseModel):
    phase: str
    frozen: bool
    frozen_at: dt.datetime | None
    published: bool
    published_at: dt.datetime | None


# ------------------------------------------------------------------------------------------------ organiser bodies


class RerunRequest(BaseModel):
    evalset: str | None = Field(default=None, pattern=NO_NUL)


class AuditRequest(BaseModel):
    sample: int | None = Field(default=None, ge=1)


class DisqualifyRequest(BaseModel):
    reason: str = Field(min_length=1, max_length=2000, pattern=NO_NUL)


class FreezeRequest(BaseModel):
    frozen: bool


class AuditLogPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    at: dt.datetime
    actor: str
    action: str
    target: str
    detail: dict[str, Any]


class AuditLogList(BaseModel):
    data: list[AuditLogPublic]
    count: int


# ---------------------------------------------------------------------------------------------------------- phases

PHASE_NAME = r"^[a-z0-9][a-z0-9_-]{0,49}$"
Visibility = Literal["public", "organisers"]


class PhasePublic(TrackDescribed):
    """A phase as participants see it: what it scores on, when it takes submissions, and its quota."""

    name: str
    title: str
    evalset: str
    opens_at: dt.datetime
    closes_at: dt.datetime | None
    open: bool
    # upcoming (opens later), open, closed (by its times) or published (its private board is: closed for good)
    state: Literal["upcoming", "open", "closed", "published"]
    daily_quota: int
    visibility: Visibility
    # GET /phases with a token: what the caller's competitor (their team, else they) submitted to it today (UTC)
    submissions_today: int | None = None


class PhasesPublic(BaseModel):
    data: list[PhasePublic]
    count: int


class PhaseCreate(BaseModel):
    name: str = Field(pattern=PHASE_NAME, description="a slug: lower-case letters, digits, - and _")
    title: Annotated[str, Field(max_length=200, pattern=NO_NUL), VisibleName] = ""
    evalset: str = Field(min_length=1, max_length=NAME_LENGTH, pattern=NO_NUL)
    opens_at: AwareDatetime | None = Field(default=None, description="default: now")
    closes_at: AwareDatetime | None = Field(default=None, description="default: open-ended")
    daily_quota: int | None = Field(default=None, ge=0, description="default: the server's daily quota")
    visibility: Visibility = "public"


class PhaseEdit(BaseModel):
    """Fields to change; a field left out stays as it is. ``closes_at`` null: open-ended; ``daily_quota`` null: the
    server's quota. The set cannot change: the phase's submissions were scored on it."""

    model_config = ConfigDict(extra="forbid")

    title: Annotated[str | None, Field(min_length=1, max_length=200, pattern=NO_NUL), VisibleName] = None
    opens_at: AwareDatetime | None = None
    closes_at: AwareDatetime | None = None
    daily_quota: int | None = Field(default=None, ge=0)
    visibility: Visibility | None = None

    @model_validator(mode="after")
    def _no_null_where_null_means_nothing(self) -> PhaseEdit:
        for name in ("title", "opens_at", "visibility"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} cannot be null (leave it out to keep it)")
        return self

    def changes(self) -> dict[str, Any]:
        """The fields the body named, with their values."""
        return self.model_dump(include=self.model_fields_set)


class PhaseClose(BaseModel):
    at: AwareDatetime | None = Field(default=None, description="default: now")


# ----------------------------------------------------------------------------------------------------------- teams


class TeamPublic(BaseModel):
    name: str
    members: list[str]  # now, in the order they joined
    max_size: int  # Settings.team_max_size
    created_at: dt.datetime
    # The name the team bore until the member it named (its founder) left it; None: never renamed.
    renamed_from: str | None = None


class TeamsPublic(BaseModel):
    data: list[TeamPublic]
    count: int


class TeamCreate(BaseModel):
    name: DisplayName


class TeamJoin(BaseModel):
    code: str = Field(min_length=1, max_length=200, pattern=NO_NUL)


class TeamAssign(BaseModel):
    user: str = Field(min_length=1, max_length=NAME_LENGTH, pattern=NO_NUL, description="the participant's name")


class InviteCreated(BaseModel):
    team: str
    code: str  # shown once: the server keeps only its hash
    expires_at: dt.datetime


# ------------------------------------------------------------------------------------------------- evaluation sets


class ScenarioPublic(BaseModel):
    name: str
    weight: float
    public_episodes: int


class RevealRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    force: StrictBool = Field(default=False, description="reveal even while a phase on the set is open and unpublished")


class EvalSetPublic(TrackDescribed):
    name: str
    commitment: str
    revealed: bool
    scenarios: list[ScenarioPublic]


class Health(BaseModel):
    """``/healthz``: healthy or not for everyone; each dependency's answer (``ok`` or its error) for organisers."""

    status: Literal["ok", "unavailable"]
    database: str | None = None
    broker: str | None = None
