"""Resource limits of one sandboxed evaluation, with their defaults and why they are what they are."""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024
MAX_POLL_SECONDS = 0.01  # polling longer than this would only burn the CPU quota of slow policies


@dataclass(frozen=True)
class SandboxLimits:
    """Limits applied to one submission's sandbox. Every breach ends an episode with a status, never silently."""

    decision_seconds: float = 2.0
    """Deadline of one decision, from sending the task to receiving the action (``timeout``). The lab's heuristics
    take well under 1 ms and a small MLP about 0.1 ms; 2 s leaves room for a cold first step (fork, page faults)."""

    episode_seconds: float = 300.0
    """Wall budget of one episode, all its decisions together (``timeout``): 500 tasks at 0.6 s each."""

    submission_seconds: float = 1800.0
    """Wall budget of the whole evaluation of one submission, container start and import included (``timeout``
    for every episode that starts after it is spent)."""

    startup_seconds: float = 120.0
    """Container start plus policy import (numpy + torch + the student's module and weights). A missed startup is
    reported as ``timeout`` when the import hangs, as ``infrastructure_error`` when the sandbox never connects."""

    memory_bytes: int = 2048 * MiB
    """Memory of the container; swap is set equal, so there is no swap (``memory_exceeded``). Torch CPU plus a
    modest model fits in a few hundred MiB."""

    pids: int = 64
    """Processes and threads in the container: the harness, one episode process and their threads."""

    cpus: float = 1.0
    """CPU quota in cores. Policies run single-threaded; one core keeps timings comparable between workers."""

    tmp_bytes: int = 64 * MiB
    """Size of the writable ``/tmp`` tmpfs, the only writable place in the container (counts towards memory)."""

    poll_seconds: float = 0.0
    """How long both ends of an episode's channel (the worker and the episode process) look for the next message
    without sleeping, before they wait asleep. A reader woken from sleep costs its sender 15-20 us and starts its
    next piece of work slower on these VMs; polling removes both (benchmarks/bench_sandbox.py --poll-us 200: Greedy's
    per-decision overhead 109 -> 37 us). Off (0) by default: with as many workers as cores, polling takes CPU the
    other evaluations need (benchmarks/bench_pipeline.py, two workers on two cores: 43.5 s -> 48 s, though polling
    pauses when it finds its core shared, see protocol.FrameReader._poll); with a spare core per worker it pays (one
    worker: 82 s -> 54-58 s)."""

    output_bytes: int = 1 * MiB
    """Captured bytes per stream (stdout, stderr) per episode; the rest is dropped and counted."""

    bundle_bytes: int = 50 * 1000 * 1000
    """Total size of a submission bundle (50 MB)."""

    bundle_files: int = 100
    """Number of files in a submission bundle."""

    kill_grace_seconds: float = 5.0
    """How long the harness gets to report a killed episode process before the whole sandbox is replaced."""

    def __post_init__(self) -> None:
        for name in (
            "decision_seconds",
            "episode_seconds",
            "submission_seconds",
            "startup_seconds",
            "cpus",
            "kill_grace_seconds",
        ):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"SandboxLimits.{name} must be positive, got {value!r}")
        if not 0 <= self.poll_seconds <= MAX_POLL_SECONDS:
            limit = MAX_POLL_SECONDS
            raise ValueError(f"SandboxLimits.poll_seconds must be within 0..{limit}, got {self.poll_seconds!r}")
        for name in ("memory_bytes", "pids", "tmp_bytes", "output_bytes", "bundle_bytes", "bundle_files"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"SandboxLimits.{name} must be a positive int, got {value!r}")
