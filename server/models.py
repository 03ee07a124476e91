"""The database schema (SQLAlchemy 2 typed models). Alembic's migrations in ``migrations/`` must match it exactly.

States and kinds are short strings guarded by CHECK constraints rather than native enums, so that SQLite and Postgres
hold the same schema and adding a value is a plain migration.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator

from layersched.sim.tracks import DEFAULT_TRACK_ID

ROLES = ("participant", "organiser")
EVALUATION_KINDS = ("initial", "rerun", "audit")
EVALUATION_STATES = ("queued", "running", "succeeded", "failed", "cancelled")
ACTIVE_STATES = ("queued", "running")
TERMINAL_STATES = ("succeeded", "failed", "cancelled")
SANDBOXES = ("docker", "process")
WEBHOOK_FORMATS = ("json", "slack")
# Who sees a phase and its boards: everyone, or the organisers only (a phase being prepared, a hidden check round).
PHASE_VISIBILITIES = ("public", "organisers")
# The longest name of a user, a team, a submission or an evaluation set: the request schemas allow exactly this
# (schemas.py), and every column a name is copied into holds it.
NAME_LENGTH = 100
# An audit entry's target is a kind and a row's id or name ("team:<name>", "evalset:<name>", "leaderboard:<phase>"):
# room for the longest kind ("leaderboard:", 12 characters) and the longest name, with some to spare.
# storage.audit refuses a longer one before PostgreSQL would (SQLite ignores lengths).
AUDIT_TARGET_LENGTH = NAME_LENGTH + 50


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class UTCDateTime(TypeDecorator[dt.datetime]):
    """A timezone-aware UTC timestamp on every backend (SQLite drops the offset; this puts it back)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: layersched stores aware UTC timestamps only")
        return value.astimezone(dt.timezone.utc)

    def process_result_value(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.timezone.utc)
        return value.astimezone(dt.timezone.utc)


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Base(DeclarativeBase):
    metadata = MetaData(
        naming_convention={
            "ix": "ix_%(column_0_label)s",
            "uq": "uq_%(table_name)s_%(column_0_name)s",
            "ck": "ck_%(table_name)s_%(constraint_name)s",
            "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
            "pk": "pk_%(table_name)s",
        }
    )


class User(Base):
    __tablename__ = "users"
    __table_args__ = (CheckConstraint(_one_of("role", ROLES), name="role"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH), unique=True)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    role: Mapped[str] = mapped_column(String(16), default="participant")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # Set by an organiser's ``admin user disable`` (None: active): the user's tokens were revoked, their uploads are
    # refused and their rows are off the boards until ``enable``. Each disabling stamps a later time than any before,
    # which the boards' fingerprint relies on (storage.leaderboard_fingerprint).
    disabled_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())

    tokens: Mapped[list[ApiToken]] = relationship(back_populates="user")
    # The user's team now (None: they compete alone). Read-only: memberships change through storage.teams.
    membership: Mapped[TeamMember | None] = relationship(
        primaryjoin="and_(User.id == TeamMember.user_id, TeamMember.left_at.is_(None))",
        viewonly=True,
        uselist=False,
    )


class ApiToken(Base):
    """A bearer token: ``lst_<lookup>_<secret>``. Only the SHA-256 of the whole token is stored."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    lookup: Mapped[str] = mapped_column(String(16), unique=True)
    token_sha256: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    last_used_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    # Part of every page session's MAC (routes/page_auth.py): signing out adds one, which ends every session signed
    # in with this token, a copied cookie's too. A counter, not a time, so signing in again at once is never refused.
    session_generation: Mapped[int] = mapped_column(Integer, default=0, server_default="0")

    user: Mapped[User] = relationship(back_populates="tokens")


class Submission(Base):
    __tablename__ = "submissions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    description: Mapped[str] = mapped_column(Text, default="")
    bundle_sha256: Mapped[str] = mapped_column(String(64), index=True)
    bundle_format: Mapped[str] = mapped_column(String(8))
    bundle_bytes: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
    # Chosen by the participant for the final ranking (at most Settings.final_submissions); ``selected_at`` orders
    # the choices and moves the leaderboard's cache key on every change of them.
    selected: Mapped[bool] = mapped_column(Boolean, default=False)
    selected_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    disqualified_reason: Mapped[str | None] = mapped_column(Text)
    # False once the initial evaluation failed through the service's fault: such a submission is given back.
    counts_against_quota: Mapped[bool] = mapped_column(Boolean, default=True)
    # The phase it was made for: its initial evaluation runs on the phase's set, its reruns and audits stay there,
    # and it ranks on that phase's boards only.
    phase_id: Mapped[int] = mapped_column(ForeignKey("phases.id"), index=True)
    # The team its owner was in when it was made (None: alone): the competitor whose Ladder it was a probe of. What
    # the Ladder showed of it then is what anyone is shown of it for good, whoever joins or leaves later.
    team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id", ondelete="SET NULL"), index=True)

    owner: Mapped[User] = relationship()
    phase: Mapped[Phase] = relationship()
    evaluations: Mapped[list[Evaluation]] = relationship(
        back_populates="submission", order_by="Evaluation.id", foreign_keys="Evaluation.submission_id"
    )


class Evaluation(Base):
    """One run of a submission on one evaluation set. Reruns and audits are new rows, never new submissions."""

    __tablename__ = "evaluations"
    __table_args__ = (
        CheckConstraint(_one_of("kind", EVALUATION_KINDS), name="kind"),
        CheckConstraint(_one_of("state", EVALUATION_STATES), name="state"),
        # What a metrics scrape reads (server/metrics.py), each from its index alone: the counts by kind and state,
        # each submission's newest evaluation that is not an audit, and the finished evaluations' wall times.
        Index("ix_evaluations_kind_state", "kind", "state"),
        Index(
            "ix_evaluations_newest",
            "submission_id",
            "id",
            "state",
            sqlite_where=text("kind <> 'audit'"),
            postgresql_where=text("kind <> 'audit'"),
        ),
        Index("ix_evaluations_durations", "state", "started_at", "finished_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16), default="initial")
    evalset_name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    evalset_commitment: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    progress_done: Mapped[int] = mapped_column(Integer, default=0)
    # Episodes recorded whose workload is not hidden: while it runs, the participant's progress counts these only,
    # so that how long each hidden episode took (which the policy controls) does not show.
    public_progress_done: Mapped[int] = mapped_column(Integer, default=0)
    progress_total: Mapped[int] = mapped_column(Integer, default=0)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    worker_id: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    heartbeat_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    started_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    error_category: Mapped[str | None] = mapped_column(String(50))
    error_message: Mapped[str | None] = mapped_column(Text)
    # What the participant may read of the error: for a hidden (keyed) episode only its status and step, never a
    # text the policy wrote (issue 15). None on rows older than that rule: participants then see the category only.
    public_error_message: Mapped[str | None] = mapped_column(Text)
    infrastructure_failure: Mapped[bool] = mapped_column(Boolean, default=False)
    sim_version: Mapped[str | None] = mapped_column(String(50))
    image_digest: Mapped[str | None] = mapped_column(String(100))
    sandbox: Mapped[str | None] = mapped_column(String(16))
    # {"overall", "ci_low", "ci_high", "per_scenario": {name: ratio}} for each leaderboard split.
    score_public: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    score_private: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    audit_of_id: Mapped[int | None] = mapped_column(ForeignKey("evaluations.id", ondelete="SET NULL"))
    audit_sample: Mapped[int | None] = mapped_column(Integer)
    # {"verdict": "match"|"mismatch", "mismatches": [str]}
    audit: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    requested_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))

    submission: Mapped[Submission] = relationship(back_populates="evaluations", foreign_keys=[submission_id])
    episodes: Mapped[list[EpisodeResult]] = relationship(
        back_populates="evaluation", order_by="(EpisodeResult.scenario, EpisodeResult.episode_id)"
    )


class EpisodeResult(Base):
    """One episode of one evaluation; unique per (evaluation, scenario, episode) so a retried write is an upsert."""

    __tablename__ = "episode_results"
    __table_args__ = (UniqueConstraint("evaluation_id", "scenario", "episode_id", name="uq_episode_results_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    evaluation_id: Mapped[int] = mapped_column(ForeignKey("evaluations.id", ondelete="CASCADE"))
    scenario: Mapped[str] = mapped_column(String(100))
    episode_id: Mapped[str] = mapped_column(String(100))
    split: Mapped[str] = mapped_column(String(16))
    # Keyed (hidden) episodes never keep stdout/stderr: a policy could print what it learnt of the hidden workload.
    hidden: Mapped[bool] = mapped_column(Boolean, default=True)
    status: Mapped[str] = mapped_column(String(32))
    # The step at which the episode failed (None: it did not fail at a step). With the status, all a participant
    # learns of a failed hidden episode; ``message`` may carry text the policy wrote and is for organisers.
    step: Mapped[int | None] = mapped_column(Integer)
    message: Mapped[str] = mapped_column(Text, default="")
    # The episode's metrics, named as its track's MetricSpecs name them (None: it did not finish), and the primary
    # one (what scores are ratios of) on its own, so that scoring reads no track.
    metrics: Mapped[dict[str, float] | None] = mapped_column(JSON)
    primary_value: Mapped[float | None] = mapped_column(Float)
    trace_hash: Mapped[str | None] = mapped_column(String(64))
    n_actions: Mapped[int] = mapped_column(Integer, default=0)
    stdout: Mapped[str | None] = mapped_column(Text)
    stderr: Mapped[str | None] = mapped_column(Text)
    recorded_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)

    evaluation: Mapped[Evaluation] = relationship(back_populates="episodes")


class ReplayScenario(Base):
    """A scenario whose episodes' schedules may be drawn, as its track's wire form: stored once by content hash, for
    the server to replay public episodes without the evaluation-set files (only workers hold those). Only scenarios
    that depend on no secret key are stored (``layersched.sim.tracks.schedules.public_workload``)."""

    __tablename__ = "replay_scenarios"

    scenario_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    track: Mapped[str] = mapped_column(String(50))
    wire: Mapped[dict[str, Any]] = mapped_column(JSON)


class ActionTrace(Base):
    """Accepted actions by the hash of their trace (``trace_hash``), stored once: the reference baseline's run of a
    public episode, which a replay page draws beside the policy's (computed by the worker the first time one of its
    evaluations records that episode, instead of by the page's first reader)."""

    __tablename__ = "action_traces"

    trace_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    actions: Mapped[bytes] = mapped_column(LargeBinary)


class EpisodeActions(Base):
    """The accepted actions of an episode whose workload is public (seeded, in a scenario without secret keys), so
    that its schedule can be replayed and drawn; a keyed episode never has a row (``storage.replays``). With them
    the reference baseline's record on the same episode, for the submission page's per-episode table."""

    __tablename__ = "episode_actions"

    episode_result_id: Mapped[int] = mapped_column(
        ForeignKey("episode_results.id", ondelete="CASCADE"), primary_key=True
    )
    scenario_hash: Mapped[str] = mapped_column(ForeignKey("replay_scenarios.scenario_hash"), index=True)
    # The episode's workload seed, in decimal (an evaluation set's seeds are any non-negative int).
    seed: Mapped[str] = mapped_column(Text)
    # layersched.sim.tracks.schedules.encode_actions: deflated zigzag varints, at most MAX_STORED_BYTES.
    actions: Mapped[bytes] = mapped_column(LargeBinary)
    # {"baseline", "metrics": {name: value}, "primary", "trace_hash"} of the track's reference baseline (None: not
    # known when the episode was recorded).
    reference: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class BaselineResult(Base):
    """A baseline's score on one evaluation set, cached by (commitment, simulator version, baseline)."""

    __tablename__ = "baseline_results"
    __table_args__ = (
        UniqueConstraint("evalset_commitment", "sim_version", "baseline", name="uq_baseline_results_key"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    evalset_commitment: Mapped[str] = mapped_column(String(64))
    sim_version: Mapped[str] = mapped_column(String(50))
    baseline: Mapped[str] = mapped_column(String(50))
    score_public: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    score_private: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # Raw per-scenario data (e.g. mean completion per episode) for the scorer; the leaderboard reads the scores.
    per_scenario: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class LeaderboardState(Base):
    """One row per phase (made when the phase's board is first read). ``snapshot`` holds the phase's public
    leaderboard as it was when it was frozen, ``private_snapshot`` the private one as it was published: the phase's
    final ranking, which nothing done later moves."""

    __tablename__ = "leaderboard_state"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    phase_id: Mapped[int] = mapped_column(ForeignKey("phases.id", ondelete="CASCADE"), unique=True)
    frozen: Mapped[bool] = mapped_column(Boolean, default=False)
    frozen_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    snapshot: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    private_published: Mapped[bool] = mapped_column(Boolean, default=False)
    published_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    private_snapshot: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class LadderVerdict(Base):
    """What the Ladder showed of a submission's public score on an evaluation set, written once: the first time a
    board saw that score (``storage.ladder``). The Ladder of the submission's origin (``Submission.team_id`` or its
    owner) judges later probes against the latest of its verdicts, so nothing that happens afterwards (an earlier
    submission finishing late, a rerun, a disqualification, a disabled or departed member) re-judges what was shown.
    """

    __tablename__ = "ladder_decisions"
    __table_args__ = (UniqueConstraint("submission_id", "evalset_name", name="uq_ladder_decisions_submission"),)

    # Its order is the order the verdicts were made in: each Ladder's history.
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))
    evalset_name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    # The probe: the submission's evaluation the Ladder judged.
    evaluation_id: Mapped[int] = mapped_column(ForeignKey("evaluations.id"))
    # The evaluation whose public score the submission shows: ``evaluation_id`` when the Ladder revealed it, else
    # its Ladder's best shown one then. No cascade: a score shown for another submission is not deleted under it.
    shown_evaluation_id: Mapped[int] = mapped_column(ForeignKey("evaluations.id"))
    decided_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class EvalSet(Base):
    __tablename__ = "evalsets"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH), unique=True)
    commitment: Mapped[str] = mapped_column(String(64))
    path: Mapped[str] = mapped_column(Text)
    # The id of the track whose problem the set's scenarios are (``layersched.sim.tracks``): the board of this set
    # reads its reference baseline and title from it. Rows older than tracks hold layers-v1, the only problem then.
    track: Mapped[str] = mapped_column(String(50), default=DEFAULT_TRACK_ID, server_default=DEFAULT_TRACK_ID)
    # [{"name", "weight", "public_episodes"}]: what GET /evalsets/current shows.
    scenarios: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    current: Mapped[bool] = mapped_column(Boolean, default=False)
    revealed: Mapped[bool] = mapped_column(Boolean, default=False)
    revealed_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Phase(Base):
    """A stage of the challenge (``dev`` on the public sample, ``final`` on the hidden set, one per track, a round):
    its own evaluation set, opening and closing times, quota and boards. Several may be open at once."""

    __tablename__ = "phases"
    __table_args__ = (CheckConstraint(_one_of("visibility", PHASE_VISIBILITIES), name="visibility"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(50), unique=True)
    title: Mapped[str] = mapped_column(String(200))
    # The set its submissions are scored on; the phase's track is the set's.
    evalset_id: Mapped[int] = mapped_column(ForeignKey("evalsets.id"), index=True)
    opens_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    closes_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())  # None: open-ended
    daily_quota: Mapped[int | None] = mapped_column(Integer)  # None: Settings.daily_quota
    visibility: Mapped[str] = mapped_column(String(16), default="public")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)

    evalset: Mapped[EvalSet] = relationship()
    # Its boards' state (None until a board is first read): a published private board closes the phase for good.
    board_state: Mapped[LeaderboardState | None] = relationship(viewonly=True, uselist=False)


class ChallengeRules(Base):
    """The challenge's own rules as the organisers applied them (``layersched admin challenge apply``): each column
    overrides its ``LAYERSCHED_*`` setting of the same name; null keeps the setting. One row at most (id 1)."""

    __tablename__ = "challenge_rules"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_deadline: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    final_submissions: Mapped[int | None] = mapped_column(Integer)
    team_max_size: Mapped[int | None] = mapped_column(Integer)
    team_invite_hours: Mapped[float | None] = mapped_column(Float)
    team_merge_deadline: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Team(Base):
    """Participants who compete as one: one quota, one leaderboard row, one final selection, and each member reads
    every submission of the others. A participant is in at most one team at a time (Kaggle's rule).

    A team whose last member leaves is dissolved: it keeps its row, since its history and its
    submissions' Ladder refer to it, but not its name, which a new team or user may take. The partial unique index
    holds one live team per name compared case-insensitively, as ``storage.names`` compares them: two requests
    racing to make ``Twin`` and ``TWIN`` cannot both succeed. A team that bore the name of a member who left is
    renamed (``storage.teams``); ``renamed_from`` is the name it bore, for its members to read."""

    __tablename__ = "teams"
    __table_args__ = (
        # An expression index: SQLAlchemy cannot reflect it on SQLite, so a migration that rebuilds this table there
        # (batch mode) drops it before and makes it again after (migrations/versions/0017_team_name_case.py).
        Index(
            "uq_teams_live_lower_name",
            text("lower(name)"),
            unique=True,
            sqlite_where=text("dissolved_at IS NULL"),
            postgresql_where=text("dissolved_at IS NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # Who made it: its founder, or the organiser who made it empty. A participant founds at most
    # Settings.team_creations teams (storage.teams.create_team counts these).
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), index=True)
    dissolved_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    renamed_from: Mapped[str | None] = mapped_column(String(NAME_LENGTH))

    members: Mapped[list[TeamMember]] = relationship(
        primaryjoin="and_(Team.id == TeamMember.team_id, TeamMember.left_at.is_(None))",
        order_by="TeamMember.id",
        viewonly=True,
    )


class TeamMember(Base):
    """One stay of a user in a team. Leaving ends the row (``left_at``) rather than deleting it: who was in which
    team when stays on record, and the leaderboard's cache key sees every change. The partial unique index keeps
    a user in one team at a time whatever requests race."""

    __tablename__ = "team_members"
    __table_args__ = (
        Index(
            "uq_team_members_active_user",
            "user_id",
            unique=True,
            sqlite_where=text("left_at IS NULL"),
            postgresql_where=text("left_at IS NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    joined_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    left_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())

    team: Mapped[Team] = relationship()
    user: Mapped[User] = relationship(foreign_keys=[user_id])


class TeamInvite(Base):
    """A one-use code that lets its holder join the team. Only the SHA-256 of the code is stored."""

    __tablename__ = "team_invites"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    code_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    used_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))

    team: Mapped[Team] = relationship()
    used_by: Mapped[User | None] = relationship(foreign_keys=[used_by_id])


class AuditLogEntry(Base):
    """Who did what to which row, and when. Written by every organiser action."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
    actor_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    actor: Mapped[str] = mapped_column(String(NAME_LENGTH))  # the actor's name
    action: Mapped[str] = mapped_column(String(50))
    target: Mapped[str] = mapped_column(String(AUDIT_TARGET_LENGTH))
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


# ------------------------------------------------------------------------------------------- running a term (issue 32)


class SignInLink(Base):
    """A one-time link to the pages (``admin user import --links``): opening it and confirming signs the browser in
    and shows a fresh API token to copy. Only the SHA-256 of its code is stored."""

    __tablename__ = "signin_links"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    code_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))

    user: Mapped[User] = relationship(foreign_keys=[user_id])


class QuotaGrant(Base):
    """Extra submissions an organiser gave a participant or a team in a phase, on one UTC day (``day``: its start):
    that day's quota of the competitor is the phase's plus every grant to it or to one of its members."""

    __tablename__ = "quota_grants"
    __table_args__ = (
        CheckConstraint("(user_id IS NULL) <> (team_id IS NULL)", name="one_target"),
        CheckConstraint("extra > 0", name="extra_positive"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    phase_id: Mapped[int] = mapped_column(ForeignKey("phases.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    day: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    extra: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))


class Webhook(Base):
    """Where the challenge's notifications go (``admin webhook add``): an evaluation's end and the alerts."""

    __tablename__ = "webhooks"
    __table_args__ = (CheckConstraint(_one_of("format", WEBHOOK_FORMATS), name="format"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    url: Mapped[str] = mapped_column(Text)
    format: Mapped[str] = mapped_column(String(16), default="json")
    # Which events it gets: "evaluation" (an evaluation ended) and "alert" (the service needs a look).
    events: Mapped[list[str]] = mapped_column(JSON, default=list)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))


class Notification(Base):
    """One message to one webhook, written in the transaction of what it reports (the outbox pattern: a result is
    never held up by a slow receiver) and delivered later, retried with backoff until ``delivered_at`` or
    ``failed_at``."""

    __tablename__ = "notifications"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    webhook_id: Mapped[int] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"), index=True)
    event: Mapped[str] = mapped_column(String(50))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    next_attempt_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), index=True)  # None: done
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    delivered_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    failed_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    last_error: Mapped[str | None] = mapped_column(Text)


class AlertState(Base):
    """Whether an alert (``no_worker``, ``queue_wait``, ``infrastructure_failures``) holds now, and when it was last
    sent: an alert is sent when it starts and again every ``Settings.alert_repeat_s`` while it holds."""

    __tablename__ = "alert_states"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(50), unique=True)
    active: Mapped[bool] = mapped_column(Boolean, default=False)
    since: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    last_sent_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())


class WorkerHeartbeat(Base):
    """A worker process alive: its reconciler writes ``beat_at`` on every pass (the analytics page and the
    ``no_worker`` alert read them)."""

    __tablename__ = "worker_heartbeats"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    worker_id: Mapped[str] = mapped_column(String(200), unique=True)
    started_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    beat_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
