"""What the runner asks of a sandbox backend (Docker container, local process), and how a backend says that its
supervisor cannot be asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from layersched.worker.sandbox.memory_accounting import MemoryHit

BackendName = Literal["docker", "process"]


class BackendUnavailable(Exception):
    """The sandbox's supervisor (the Docker engine) cannot be asked: down, restarting or not answering.

    Nothing is wrong with the bundle. Whatever happened to the sandbox meanwhile is the service's failure
    (``infrastructure_error``, retried), never the policy's crash.
    """


class Backend(Protocol):
    """Start the harness on a channel directory and a bundle, report on it, and remove it."""

    @property
    def name(self) -> BackendName: ...

    @property
    def image_digest(self) -> str: ...

    @property
    def sandbox_uid(self) -> int | None:
        """The user the harness runs as, when it is not the worker's own (the channel's socket is given to it)."""
        ...

    def start(self, channel_dir: Path, bundle_dir: Path, *, nonce: str) -> None: ...

    def alive(self) -> bool: ...  # raises BackendUnavailable when the engine cannot be asked

    @property
    def memory_accounted(self) -> bool:
        """Whether ``memory_window_end`` counts the memory limit (a cgroup's or the engine's record), so that its
        None means "not hit"; False where nothing counts it (a bound on the address space refuses allocations)."""
        ...

    def memory_window_end(self, *, verdict: bool = True) -> MemoryHit | None:
        """How the sandbox's memory limit was hit since the last call (or the sandbox's start); None if it was not,
        or if this backend cannot tell. Starts the next window. Read on the trusted side (the host's view of the
        sandbox's memory cgroup, or the engine), never from the sandbox. ``verdict`` False: only the next window
        starts (a backend that would have to ask its engine for the answer does not)."""
        ...

    def describe_exit(self) -> str: ...

    def killed_from_outside(self) -> bool:
        """Whether the sandbox is gone by a kill from outside (removed, or its first process ended by SIGKILL), not
        by an error of its own. Only such an end makes the runner replay an episode: the policy cannot cause it."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Detachable(Protocol):
    """A backend whose sandbox can be handed over to be removed elsewhere (the warm pool's background thread)."""

    def detach(self) -> Any: ...
