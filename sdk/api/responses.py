"""What the layersched API answers (docs/API.md), as the frozen dataclasses the client decodes it into.

A field that a server older than a feature does not send has a default that says so (``phase: None``: a server older
than phases); every other documented field is required, so an answer without it is the server's error. A text
that may span lines is ``Multiline`` (``terminal_text``: it keeps its line breaks when the CLI escapes it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from layersched.sdk.errors import error_for
from layersched.sdk.terminal_text import Multiline
from layersched.sim.tracks import DEFAULT_TRACK_ID, get_track

TERMINAL_STATES = frozenset({"succeeded", "failed", "cancelled"})

T = TypeVar("T")


@dataclass(frozen=True)
class Me:
    id: int
    name: str
    email: str
    role: str
    submissions_today: int  # the team's, for a member of one
    daily_quota: int
    team: str | None = None  # None: competes alone (or a server older than teams)


@dataclass(frozen=True)
class Team:
    """A team (``GET /teams/mine``): its members now, in the order they joined, and the most it may have."""

    name: str
    members: list[str]
    max_size: int
    created_at: str
    renamed_from: str | None = None  # the name it bore until the member it named left it (None: never renamed)


@dataclass(frozen=True)
class Invite:
    """A one-use code to join ``team``, valid until ``expires_at``; the server shows it once."""

    team: str
    code: str
    expires_at: str


@dataclass(frozen=True)
class Refusal:
    """The error that an upload made now would get: the HTTP status and the error body's code and message,
    word for word (the server runs the upload's own checks)."""

    status: int
    code: str
    message: str


@dataclass(frozen=True)
class Allowance:
    """``GET /me/allowance``: whether an upload made now would be accepted, and the counts behind it."""

    submissions_today: int
    daily_quota: int
    in_flight: int
    max_in_flight: int
    refusal: Refusal | None = None
    # The phase the upload would be for and its track (None: a server older than phases, or no such phase).
    phase: str | None = None
    track: str | None = None

    def raise_if_refused(self) -> None:
        """Raise the error the upload would get (``QuotaExceeded``, ``Conflict``, ...), before anything is sent."""
        if self.refusal is not None:
            raise error_for(self.refusal.status, self.refusal.code, self.refusal.message)


@dataclass(frozen=True)
class User:
    id: int
    name: str
    email: str
    role: str


@dataclass(frozen=True)
class Progress:
    done: int
    total: int


@dataclass(frozen=True)
class ErrorInfo:
    category: str
    message: Multiline  # a public episode's error may quote a traceback


@dataclass(frozen=True)
class Score:
    """Public-split score: weighted geometric mean of per-scenario ratios to the reference baseline of its set's
    track (lower is better) and its 95% CI."""

    overall: float
    ci_low: float
    ci_high: float
    per_scenario: dict[str, float]


@dataclass(frozen=True)
class AuditVerdict:
    verdict: str
    mismatches: list[str]


@dataclass(frozen=True)
class Evaluation:
    id: int
    kind: str
    state: str
    evalset_commitment: str
    bundle_sha256: str
    progress: Progress
    # docs/API.md says str, but a queued evaluation has not chosen its simulator or sandbox yet: the server sends null.
    sim_version: str | None = None
    sandbox: str | None = None
    image_digest: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    error: ErrorInfo | None = None
    audit: AuditVerdict | None = None
    evalset_name: str | None = None
    # An audit's: the evaluation whose episodes it replays and compares with (the newest succeeded one).
    audit_of: int | None = None

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL_STATES


@dataclass(frozen=True)
class EvaluationDetail(Evaluation):
    """``GET /admin/evaluations/{id}``: an evaluation with its per-episode rows (kept as JSON objects)."""

    episodes: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class QueuePlace:
    """Where a queued submission stands: 1 is next. The estimates (seconds) come from recent run times and the
    workers alive; None when the server has too few recent runs to tell."""

    position: int
    queued: int
    workers: int
    starts_in_s: float | None = None
    done_in_s: float | None = None


@dataclass(frozen=True)
class Submission:
    id: int
    name: str
    owner: str
    created_at: str
    bundle_sha256: str
    state: str
    progress: Progress
    description: Multiline = ""
    disqualified: Multiline | None = None
    error: ErrorInfo | None = None
    score: Score | None = None
    rank: int | None = None
    evaluations: list[Evaluation] = field(default_factory=list)
    # Chosen for the final ranking (``layersched select``).
    selected: bool = False
    # Under the Ladder: False when ``score`` is your best shown public score, which this submission did not beat by
    # more than the step; None when the Ladder plays no part.
    score_revealed: bool | None = None
    phase: str | None = None  # the phase it was submitted to (None: a server older than phases)
    queue: QueuePlace | None = None  # while queued (None: not queued, or a server older than queue places)

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL_STATES


@dataclass(frozen=True)
class EpisodeLog:
    scenario: str
    episode: str
    status: str
    message: Multiline | None = None
    stdout: Multiline | None = None  # public sample-set episodes only
    stderr: Multiline | None = None


@dataclass(frozen=True)
class LeaderboardRow:
    rank: int | None
    participant: str
    submission_name: str
    score: float
    ci_low: float
    ci_high: float
    submission_id: int | None = None
    per_scenario: dict[str, float] = field(default_factory=dict)
    submissions: int = 0
    submitted_at: str | None = None
    baseline: bool = False
    members: list[str] = field(default_factory=list)  # a team's row: its members; empty otherwise
    metrics: dict[str, float] = field(default_factory=dict)  # each metric's mean over the split (issue 33)

    def is_for(self, name: str) -> bool:
        """Whether this row is the participant ``name``'s: their own, or their team's."""
        return not self.baseline and (self.participant == name or name in self.members)


class OnTrack:
    """A set or board that names its track (docs/API.md, "Tracks"): ``track``, ``track_title``, ``reference_baseline``.

    A server older than tracks sends none of them: its only problem was the default track's.
    """

    track: str
    reference_baseline: str | None

    @property
    def reference(self) -> str:
        """The baseline its scores are ratios to: as the server says, else (an older server) as the track says."""
        return self.reference_baseline or get_track(self.track).reference_baseline


@dataclass(frozen=True)
class Leaderboard(OnTrack):
    split: str
    frozen: bool
    published: bool
    rows: list[LeaderboardRow]
    track: str = DEFAULT_TRACK_ID
    track_title: str | None = None
    reference_baseline: str | None = None
    phase: str | None = None  # None: a server older than phases


@dataclass(frozen=True)
class PhaseInfo(OnTrack):
    """A phase of the challenge (``GET /phases``): the set it scores on, when it takes submissions, its quota."""

    name: str
    title: str
    evalset: str
    opens_at: str
    open: bool
    daily_quota: int
    visibility: str
    closes_at: str | None = None
    track: str = DEFAULT_TRACK_ID
    track_title: str | None = None
    reference_baseline: str | None = None
    # upcoming, open, closed or published (None: a server older than issue 29, which sends only ``open``)
    state: str | None = None
    submissions_today: int | None = None  # asked with a token: the caller's (team's) uploads to it today

    @property
    def status(self) -> str:
        """``open``, ``closed``, ``published`` (closed for good) or ``opens later``."""
        if self.state is None:
            return "open" if self.open else "closed"
        return "opens later" if self.state == "upcoming" else self.state


@dataclass(frozen=True)
class LeaderboardState:
    phase: str
    frozen: bool
    published: bool
    frozen_at: str | None = None
    published_at: str | None = None


@dataclass(frozen=True)
class EvalSetScenario:
    name: str
    weight: float
    public_episodes: int


@dataclass(frozen=True)
class EvalSetInfo(OnTrack):
    name: str
    commitment: str
    scenarios: list[EvalSetScenario]
    track: str = DEFAULT_TRACK_ID
    track_title: str | None = None
    reference_baseline: str | None = None


@dataclass(frozen=True)
class CreatedUser:
    user: User
    token: str  # shown once


@dataclass(frozen=True)
class CreatedToken:
    id: int
    token: str  # shown once


@dataclass(frozen=True)
class AuditLogEntry:
    at: str
    actor: str
    action: str
    target: str | None = None
    detail: Any = None


@dataclass(frozen=True)
class Page(Generic[T]):
    data: list[T]
    count: int
