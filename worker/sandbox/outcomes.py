"""What a sandboxed evaluation is asked to run and what it reports: the job, the outcome and its status, the timing
benchmarks read, and the errors of a sandbox that cannot be used as asked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from layersched.sim.episodes import EpisodeSpec
from layersched.sim.tracks import DEFAULT_TRACK_ID

Status = Literal[
    "ok",
    "invalid_action",
    "protocol_error",
    "timeout",
    "memory_exceeded",
    "crash",
    "import_error",
    "infrastructure_error",
]


class SandboxError(Exception):
    """The sandbox cannot be used as asked (bad bundle, refused episode, unknown backend)."""


class BundleError(SandboxError):
    """A submission bundle breaks the bundle rules (layout, size, file count, links)."""


class HiddenEpisodeRefused(SandboxError):
    """A hidden (keyed) episode was sent to the process backend without the organiser's explicit permission."""


@dataclass(frozen=True)
class EpisodeJob:
    """One episode to evaluate: the scenario (by name and value, a scenario of ``track``), the episode, and the
    policy's seed."""

    scenario_name: str
    scenario: Any
    episode: EpisodeSpec
    policy_seed: int
    track: str = DEFAULT_TRACK_ID


@dataclass(frozen=True)
class EpisodeTiming:
    """Where an ``ok`` episode's wall time went, for benchmarks (never for scores).

    Measured on the trusted side: ``setup_seconds``, from the start of the episode to sending its first task (the
    sandbox forks the episode process, which connects); ``reply_wait_seconds``, from sending each task to having
    the reply, summed; ``end_seconds``, from the last reply to the harness's report that the episode process has
    exited (its exit included). The rest is the harness's own report (untrusted: the policy runs in its process)
    of the episode process's time: in the policy's calls, updating the replica, waiting for (and reading) the next
    task, and sending the reply.
    """

    decisions: int
    setup_seconds: float
    end_seconds: float
    reply_wait_seconds: float
    policy_seconds: float
    replica_seconds: float
    task_wait_seconds: float
    send_seconds: float


@dataclass(frozen=True)
class EpisodeOutcome:
    """How one episode ended. ``metrics`` (the track's record, ``TrustedEpisode.metrics``) only for ``ok``;
    ``trace_hash`` covers the ``n_actions`` accepted actions.

    ``step`` is the step at which it failed (None: it did not fail at a step). ``message`` may quote what the
    sandbox wrote (a traceback, a bad value), cut to ``MAX_MESSAGE_CHARS``.
    """

    scenario_name: str
    episode_id: str
    status: Status
    message: str
    metrics: Any
    trace_hash: str
    n_actions: int
    step: int | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_dropped: int = 0
    stderr_dropped: int = 0
    timing: EpisodeTiming | None = None
    # The accepted actions themselves (trusted: checked by the simulator), in order: what ``trace_hash`` hashes.
    # The pipeline keeps them only for an episode whose workload is public (issue 33).
    actions: tuple[int, ...] = ()
