"""Whether a sandbox hit its memory limit, by the container's memory cgroup as the host sees it (trusted side).

An episode can end past its deadline after its memory limit was hit: on a loaded machine the out-of-memory killer
may end the allocating process just before the deadline while its exit (which frees its memory first) closes the
channel just after, or the deadline's kill may land while usage sits at the limit; and a process of the episode
may be killed while another one holds the channel. Only the kernel's record tells which limit was hit, so the
driver asks it whenever an episode ends otherwise than by a reply (a timeout, a killed or vanished process), and
the message names that limit. Nothing here is read in the sandbox: the counters are the kernel's, in the host's
view of the container's cgroup, which no process of the container can write.

The record is kept in windows: ``CgroupMemory.window_end`` says what happened since the previous call (or the
container's start) and starts the next window. The runner ends one when the sandbox is ready and after every
episode's exit report, so a window holds one episode (and the import of its process, forked after the previous
report).

* cgroup v2 (``memory.events``): the counters ``oom_kill`` (processes the out-of-memory killer killed), ``oom``
  (times the limit could not be kept by reclaim) and ``max`` (times usage was about to pass the limit).
* cgroup v1 (``memory.oom_control``, ``memory.max_usage_in_bytes``): ``oom_kill`` and ``under_oom``, and the peak
  usage against ``memory.limit_in_bytes``; a peak at the limit is reset when its window ends (root only; otherwise
  a peak already at the limit tells the next windows nothing more). v1's ``memory.failcnt`` would be the counter,
  but this machine's kernel (6.18) leaves it at 0 even across out-of-memory kills.

A window's end reads one file (v2) or two (v1): 41 us here (cgroup v1), once per episode.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

V2_EVENTS = "memory.events"
V1_OOM_CONTROL = "memory.oom_control"
V1_PEAK = "memory.max_usage_in_bytes"
V1_LIMIT = "memory.limit_in_bytes"


def container_cgroup(container_id: str, root: Path = Path("/sys/fs/cgroup")) -> Path | None:
    """The memory cgroup of a Docker container as this host mounts it (v1 or v2, the cgroupfs or the systemd
    driver); None if this process cannot see it (a worker in a container of its own, say)."""
    for directory in (
        root / "memory" / "docker" / container_id,  # v1, cgroupfs (this machine's engine)
        root / "memory" / "system.slice" / f"docker-{container_id}.scope",  # v1, systemd
        root / "system.slice" / f"docker-{container_id}.scope",  # v2, systemd
        root / "docker" / container_id,  # v2, cgroupfs
    ):
        if (directory / V2_EVENTS).is_file() or (directory / V1_OOM_CONTROL).is_file():
            return directory
    return None


def _keyed(path: Path) -> dict[str, int]:
    """A cgroup file of ``name value`` lines."""
    values = {}
    for line in path.read_text().splitlines():
        name, _, value = line.partition(" ")
        with contextlib.suppress(ValueError):
            values[name] = int(value)
    return values


@dataclass(frozen=True)
class MemoryHit:
    """The memory limit was hit: the out-of-memory killer killed ``oom_kills`` processes (0: usage reached the
    limit), as ``source`` counted them."""

    oom_kills: int
    source: str = "cgroup"

    def __str__(self) -> str:
        if self.source != "cgroup":
            return f"the {self.source} reports an out-of-memory kill in the sandbox"
        if self.oom_kills:
            return f"the out-of-memory killer killed {self.oom_kills} process{'es' if self.oom_kills > 1 else ''}"
        return "the sandbox's memory usage reached the limit"


def killed_by_the_limit(hit: MemoryHit, limit_bytes: int) -> str:
    """How a process that ended by SIGKILL while the limit was hit ended, naming the limit."""
    if hit.oom_kills:
        return f"killed by the out-of-memory killer (limit {limit_bytes} bytes)"
    return f"killed by signal SIGKILL at the memory limit: {hit} (limit {limit_bytes} bytes)"


def past_the_deadline(hit: MemoryHit, limit_bytes: int, step: int | None, deadline: str) -> str:
    """The message of an episode that ran past ``deadline`` (its timeout message) after the limit was hit: the
    memory limit ended it, and the message names that limit first."""
    prefix = "" if step is None else f"step {step}: "
    return f"{prefix}out of memory: {hit} (limit {limit_bytes} bytes); then its deadline passed: " + (
        deadline.removeprefix(prefix)
    )


def refusal_at_the_limit(hit: MemoryHit | None, limit_bytes: int, *, accounted: bool) -> tuple[bool, str]:
    """Whether an allocation the policy was refused (a MemoryError not of its own ``raise``) was the memory limit,
    and what to say of it after ``MemoryError``. The sandbox's accounting decides (review of issue 30, item 10):
    the limit only if it was hit in the episode's window. Where nothing counts it (``accounted`` False: the process
    sandbox, whose bound is the address space, ``RLIMIT_AS``, which refuses allocations and counts nothing), a
    refused allocation is that bound."""
    if hit is not None:
        return True, f"; {hit} (limit {limit_bytes} bytes)"
    if not accounted:
        return True, f" (limit {limit_bytes} bytes)"
    return (
        False,
        f": an allocation was refused while the sandbox's memory stayed below its limit of {limit_bytes} bytes",
    )


@dataclass(frozen=True)
class _Counts:
    """What the cgroup has counted so far: out-of-memory kills, and times usage reached the limit (v1: whether it
    is or was at the limit in this window, 0 or 1 each)."""

    oom_kills: int
    at_limit: int


class CgroupMemory:
    """The memory accounting of one container's cgroup (its directory on the host), read in windows."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.v2 = (directory / V2_EVENTS).is_file()
        self._limit = 0 if self.v2 else int((directory / V1_LIMIT).read_text())  # the container's, for its life
        self._start = _Counts(0, 0)  # the cgroup is the container's, counted from its start

    def _counts(self) -> _Counts:
        if self.v2:
            events = _keyed(self.directory / V2_EVENTS)
            return _Counts(events.get("oom_kill", 0), events.get("max", 0) + events.get("oom", 0))
        control = _keyed(self.directory / V1_OOM_CONTROL)
        peak = int((self.directory / V1_PEAK).read_text())
        return _Counts(control.get("oom_kill", 0), control.get("under_oom", 0) + (peak >= self._limit))

    def window_end(self) -> MemoryHit | None:
        """How the memory limit was hit since the last call (or the start); None if it was not. Starts the next
        window. Raises ``OSError`` when the cgroup is gone (the container stopped)."""
        try:
            now = self._counts()
        except ValueError as exc:  # not the kernel's format: as unreadable
            raise OSError(f"unreadable memory accounting in {self.directory}: {exc}") from exc
        start, self._start = self._start, now
        if not self.v2 and now.at_limit:
            # v1's peak is a high-water mark: one at the limit is reset to the present usage (root may), so that
            # the next window can see the limit reached again; counted from there.
            with contextlib.suppress(OSError):
                (self.directory / V1_PEAK).write_text("0")
            with contextlib.suppress(OSError, ValueError):
                self._start = self._counts()
        kills = now.oom_kills - start.oom_kills
        if kills > 0 or now.at_limit > start.at_limit:
            return MemoryHit(max(kills, 0))
        return None
