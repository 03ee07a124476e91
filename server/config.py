"""The service's one configuration object, read from ``LAYERSCHED_*`` environment variables (or a ``.env`` file)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AwareDatetime, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from layersched.sim.evalset import SAMPLE_PATH


class Settings(BaseSettings):
    """Everything the server, the migrations and the worker's storage calls need to know."""

    model_config = SettingsConfigDict(env_prefix="LAYERSCHED_", env_file=".env", extra="ignore")

    database_url: str = "sqlite:///./var/layersched.db"
    broker_url: str = "redis://127.0.0.1:6379/0"
    bundle_dir: Path = Path("./var/bundles")

    # The bundle limits README's contract states; the CLI's (sdk/bundle.py) are these (tests/server/test_limits.py).
    max_bundle_mb: Annotated[float, Field(gt=0, description="largest accepted upload, in MB (10**6 bytes)")] = 50
    max_files: Annotated[
        int, Field(gt=0, description="most files an archive bundle may hold (and at most as many folder entries)")
    ] = 100
    max_unpacked_mb: Annotated[
        float,
        Field(
            gt=0,
            description="largest total size of a bundle's files, in MB: the one unpacked limit of the upload check, "
            "the worker's unpacking and the sandbox's staging (SandboxLimits.bundle_bytes)",
        ),
    ] = 50
    daily_quota: Annotated[int, Field(ge=0, description="submissions per participant per UTC day")] = 5
    max_in_flight: Annotated[int, Field(ge=1, description="queued or running evaluations per participant")] = 2
    stuck_timeout_s: Annotated[
        float, Field(gt=0, description="a running evaluation without heartbeat this long is stuck")
    ] = 600
    max_attempts: Annotated[int, Field(ge=1, description="times an evaluation is started before it fails for good")] = 3

    public_ladder_step: Annotated[
        float | None,
        Field(
            gt=0,
            description="the Ladder (Blum & Hardt): show a participant's new public score only when it beats their "
            "best shown score by more than this (e.g. 0.01); unset shows every score. The private split decides.",
        ),
    ] = None

    # The final ranking, as on Kaggle: each participant's selected submissions (or, with none selected, their best
    # public ones) compete on the private split, so nobody is ranked on a choice made with the hidden scores.
    final_submissions: Annotated[
        int,
        Field(
            ge=1,
            description="submissions a participant may select for the final ranking; their final score is the best "
            "private score among them (with none selected, among their this many best public ones). Kaggle: 2",
        ),
    ] = 2
    submission_deadline: Annotated[
        AwareDatetime | None,
        Field(
            description="when uploads and selection changes close, with its time zone (e.g. 2026-06-30T23:59:00Z); "
            "unset: they close only when the private leaderboard is published",
        ),
    ] = None

    # Teams, with Kaggle's rules where a choice is needed (storage/teams.py): one team per participant, no changes
    # to teams after the merger deadline, a joiner's past submissions count against the team's quota.
    team_max_size: Annotated[
        int, Field(ge=1, description="most members a team may have; 1 keeps every participant on their own")
    ] = 3
    team_invite_hours: Annotated[float, Field(gt=0, description="how long an invite code can be used")] = 72
    team_live_invites: Annotated[
        int | None,
        Field(
            ge=1,
            description="invite codes a team may hold at once unused and unexpired (made by its members now); more "
            "are refused until one is used or expires. Unset: twice LAYERSCHED_TEAM_MAX_SIZE",
        ),
    ] = None
    team_creations: Annotated[
        int,
        Field(
            ge=0,
            description="teams a participant may found over the challenge, dissolved ones included (each takes a "
            "name and begins a Ladder); organisers' teams do not count. 0: only organisers make teams",
        ),
    ] = 3
    team_merge_deadline: Annotated[
        AwareDatetime | None,
        Field(
            description="after this time (with its time zone) participants can no longer create, join or leave "
            "teams (Kaggle's team merger deadline); organisers still can. Unset: teams change until the end",
        ),
    ] = None

    signin_link_hours: Annotated[
        float, Field(gt=0, description="how long a one-time sign-in link (admin user import --links) can be used")
    ] = 168

    public_url: Annotated[
        str | None,
        Field(
            description="the address browsers use for the site, scheme and host only (e.g. https://layersched.example."
            "org): the pages' forms accept posts from this origin only and their sign-in cookie is Secure when it is "
            "https. Set it behind a TLS proxy, whose X-Forwarded-Proto uvicorn trusts only from 127.0.0.1 by default; "
            "unset: the address each request arrived at",
        ),
    ] = None

    metrics_token_sha256: Annotated[
        str | None,
        Field(
            description="the SHA-256 (64 hex digits) of the token Prometheus sends to /metrics, which opens nothing "
            "else (`layersched admin metrics-token` makes a token and prints both); unset: only organisers' tokens "
            "read /metrics",
        ),
    ] = None

    # The public sample set shipped in the package: the very file `layersched validate` scores on.
    evalset_path: Path = SAMPLE_PATH
    # More sets for phases to score on (the sample beside the hidden set: a dev phase beside the final one): `serve`
    # registers each, not current, with its baselines' rows; `layersched admin phase create --evalset NAME` uses them.
    extra_evalset_paths: Annotated[
        tuple[Path, ...],
        Field(
            description="evaluation set files registered besides LAYERSCHED_EVALSET_PATH (not current), as a JSON "
            "list: LAYERSCHED_EXTRA_EVALSET_PATHS='[\"hidden_seeds/sample.toml\"]'"
        ),
    ] = ()
    # Tracks beyond the built-in ones: a set registered on one is described (its board's reference, title) from it.
    track_modules: Annotated[
        tuple[str, ...],
        Field(
            description="modules that define a TRACK (layersched.sim.tracks) besides the built-in ones, as a JSON "
            "list: LAYERSCHED_TRACK_MODULES='[\"my_tracks.toy\"]'"
        ),
    ] = ()

    # The worker's side (issue 6) reads these; they live here because the service has one Settings.
    sandbox_backend: Literal["auto", "docker", "process"] = "auto"
    sandbox_image: str = "layersched-sandbox:latest"
    sandbox_memory_mb: Annotated[int, Field(gt=0)] = 2048
    sandbox_pool_size: Annotated[
        int,
        Field(
            ge=0,
            description="docker sandboxes each worker process keeps started ahead (each serves one evaluation), "
            "which takes the container start (about 0.25-0.4 s) off every evaluation's wall time; 0 (default) starts "
            "every sandbox when its evaluation begins",
        ),
    ] = 0
    sandbox_poll_us: Annotated[
        int,
        Field(
            ge=0,
            le=10_000,
            description="microseconds both ends of a sandbox's channel (worker and episode process) look for the next "
            "message before they sleep: about 2x faster decisions where a worker has a spare core "
            "(benchmarks/bench_sandbox.py --poll-us 200); 0 (default) never polls, since with as many workers as "
            "cores polling takes CPU the other evaluations need (see SandboxLimits.poll_seconds)",
        ),
    ] = 0
    allow_process_for_hidden: Annotated[
        bool,
        Field(description="run hidden episodes in the process sandbox when Docker is missing (trusted demos only)"),
    ] = False
    decision_seconds: Annotated[float, Field(gt=0, description="wall budget of one policy decision")] = 2.0
    episode_seconds: Annotated[float, Field(gt=0, description="wall budget of one episode")] = 300.0
    submission_seconds: Annotated[float, Field(gt=0, description="wall budget of a whole evaluation")] = 1800.0
    startup_seconds: Annotated[
        float, Field(gt=0, description="container start plus the policy's import (a hanging import: timeout)")
    ] = 120.0
    task_time_limit_s: Annotated[int, Field(gt=30, description="Celery hard time limit of an evaluation task")] = 3600
    visibility_timeout_s: Annotated[
        int, Field(gt=0, description="Redis visibility timeout; above any evaluation's time")
    ] = 7200
    leaderboard_cache_s: Annotated[
        float,
        Field(ge=0, description="how long the API may show a leaderboard before looking for other processes' writes"),
    ] = 1.0
    baseline_cache_dir: Path = Path("./var/baselines")
    reconcile_interval_s: Annotated[float, Field(gt=0, description="how often the reconciler looks for lost work")] = 30
    worker_alive_s: Annotated[
        float,
        Field(
            gt=0,
            description="a worker whose reconciler wrote no heartbeat for this long counts as gone (queue estimates, "
            "the analytics page, the no-worker alert); above LAYERSCHED_RECONCILE_INTERVAL_S",
        ),
    ] = 120
    notify_interval_s: Annotated[
        float,
        Field(
            ge=0,
            description="how often the API process delivers webhook notifications and checks the alerts (admin "
            "webhook add); 0: never (no notifications are sent)",
        ),
    ] = 5
    alert_queue_wait_s: Annotated[
        float, Field(gt=0, description="alert when the oldest queued evaluation has waited longer than this")
    ] = 900
    alert_window_s: Annotated[
        float, Field(gt=0, description="the window over which the service's share of failures is counted")
    ] = 3600
    alert_infrastructure_rate: Annotated[
        float,
        Field(
            ge=0,
            le=1,
            description="alert when more than this share of the evaluations that ended in the window "
            "failed through the service",
        ),
    ] = 0.2
    alert_min_ended: Annotated[
        int, Field(ge=1, description="the failure-rate alert needs at least this many evaluations in the window")
    ] = 5
    alert_repeat_s: Annotated[float, Field(gt=0, description="an alert that holds is sent again this often")] = 3600
    health_probe_timeout_s: Annotated[
        float,
        Field(
            gt=0,
            description="how long /healthz waits for the database and for the broker to connect and to answer "
            "(each; the database's connect takes at least 2 s to give up, PostgreSQL's least connect_timeout) "
            "before it reports the service unavailable",
        ),
    ] = 2
    requeue_after_s: Annotated[
        float, Field(gt=0, description="a queued evaluation this old, with its queue empty, is sent again")
    ] = 120

    @field_validator("public_url")
    @classmethod
    def _an_origin(cls, value: str | None) -> str | None:
        """The origin a browser sends in its Origin header (lower-case, no trailing slash), or a refusal naming it."""
        if not value:  # compose passes an unset variable on as ""
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
            raise ValueError(f"LAYERSCHED_PUBLIC_URL={value!r} is not an http(s) URL with a host, e.g. https://x.org")
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ValueError(f"LAYERSCHED_PUBLIC_URL={value!r} is not an origin: give the scheme and host only")
        return f"{parts.scheme}://{parts.netloc.lower()}"

    @field_validator("metrics_token_sha256")
    @classmethod
    def _a_sha256(cls, value: str | None) -> str | None:
        """A SHA-256 in lower-case hex (as ``storage.token_sha256`` writes it), or a refusal saying what it wants."""
        if not value:  # compose passes an unset variable on as ""
            return None
        if not re.fullmatch(r"[0-9a-fA-F]{64}", value):
            raise ValueError(
                f"LAYERSCHED_METRICS_TOKEN_SHA256 has {len(value)} characters, not a SHA-256's 64 hex digits: set it "
                "to the hash `layersched admin metrics-token` prints, not to the token"
            )
        return value.lower()

    @property
    def team_live_invites_limit(self) -> int:
        """``team_live_invites``, or twice ``team_max_size`` when unset: room to invite every seat, and as many again
        for codes sent to someone who never used them."""
        return self.team_live_invites if self.team_live_invites is not None else 2 * self.team_max_size

    @property
    def max_bundle_bytes(self) -> int:
        return int(self.max_bundle_mb * 1_000_000)

    @property
    def max_unpacked_bytes(self) -> int:
        return int(self.max_unpacked_mb * 1_000_000)


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings; tests call ``get_settings.cache_clear()`` or pass their own to ``create_app``."""
    return Settings()
