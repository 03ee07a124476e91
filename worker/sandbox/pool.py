"""A warm pool of docker sandboxes: containers started before they are needed, each used for exactly one evaluation.

Starting a container (about 0.3-0.4 s here) costs more than a whole in-process Greedy evaluation. A worker with a
pool keeps ``size`` containers started ahead, in the background::

    pool = SandboxPool(size=1, limits=limits, image=image)
    install(pool)                         # open_sandbox(..., backend="docker") now claims from it
    ...
    uninstall().close()                   # at shutdown: idle containers removed, background removals finished

A pooled container is started exactly like any other (``DockerBackend.start``: same lockdown, same two read-only
mounts, same environment), except that its bundle directory, a directory of its own on the host, is still empty:
the harness connects, reports its simulator (``sim``) and waits. ``claim`` checks that the harness answers a ping
and that the image tag still names the image it was started from, and hands it over; the session copies the
bundle into that directory (visible read-only inside) and sends ``load``, and the harness imports it as after a
cold start. The claimed container leaves the pool for good: the session removes it at the end (here, in the
background), and only then does the pool start another one, so that the start's CPU (about 0.2 s) is not taken from
the evaluation; a claim that finds no container ready waits for one the pool is starting.

What issue #3 point 8 asks of a sandbox still holds: a container serves at most one evaluation (it is taken out of
the pool under a lock and never put back; a session that must replace it starts a fresh one); before the claim it
ran only the harness, no participant's code; it sees only its bundle and channel directories; its environment is
the same, without secrets. A killed worker's pool containers carry the usual labels and are swept when a worker
starts, and pool directories are run directories, swept like every other.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import logging
import math
import queue
import secrets
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from docker.errors import APIError, DockerException, NotFound

from layersched.worker.sandbox import protocol
from layersched.worker.sandbox.docker_backend import DEFAULT_IMAGE, DockerBackend
from layersched.worker.sandbox.limits import SandboxLimits
from layersched.worker.sandbox.run_dirs import RunDir

log = logging.getLogger(__name__)

BUNDLE_DIR = "bundle"
# How long a pooled harness gets to answer the claim's ping; a live one answers in well under a millisecond.
PING_SECONDS = 2.0
# Between failed starts (engine down, image missing) the pool waits longer and longer, up to this.
MAX_BACKOFF_SECONDS = 30.0
# The next container is started when the claimed one is let go (its evaluation ended), not while its evaluation
# runs: a start costs about 0.2 s of CPU in the harness and the engine, which the evaluation would lose on a busy
# machine. A claim that never comes back (a session that was not closed) holds the refill off for this long at most.
REFILL_DEFER_SECONDS = 30.0


def _container_config(limits: SandboxLimits) -> tuple[Any, ...]:
    """The limits fixed when a container starts; the others (deadlines, budgets) are the session's."""
    return limits.memory_bytes, limits.pids, limits.cpus, limits.tmp_bytes, limits.output_bytes, limits.poll_seconds


@dataclass
class WarmSandbox:
    """A started, never-used container waiting for its bundle, with its run directory and channel."""

    run: RunDir
    channel_dir: Path
    listener: socket.socket
    ctl: socket.socket
    backend: DockerBackend
    sim_fingerprint: str | None
    start_seconds: float
    remove_later: Callable[[Any], None] = field(repr=False)
    claim_seconds: float = math.nan

    def discard(self) -> None:
        """Let it go unused: tell the harness to exit, close the channel, remove the container and the directory."""
        with contextlib.suppress(OSError, protocol.ProtocolError):
            protocol.send(self.ctl, {"type": "shutdown"})
        for sock in (self.ctl, self.listener):
            with contextlib.suppress(OSError):
                sock.close()
        container = self.backend.detach()
        if container is not None:
            self.remove_later(container)
        self.run.remove()


class SandboxPool:
    """Keeps ``size`` warm docker sandboxes for ``limits`` and ``image``; ``size=0`` keeps none (claims fail)."""

    def __init__(self, *, size: int, limits: SandboxLimits | None = None, image: str | None = None) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError(f"SandboxPool size must be an int >= 0, got {size!r}")
        self.size = size
        self.limits = limits if limits is not None else SandboxLimits()
        self.image = image or DEFAULT_IMAGE
        self.started = 0  # containers this pool started (for tests and logs)
        self._cond = threading.Condition()
        self._idle: collections.deque[WarmSandbox] = collections.deque()
        self._starting = 0
        self._claimed: dict[str, float] = {}  # container id -> when it was claimed, until its session lets it go
        self._failures = 0  # failed starts in a row (the filler backs off)
        self._closed = False
        self._removals: queue.Queue[Any] = queue.Queue()
        self._threads = [
            threading.Thread(target=self._fill, name="sandbox-pool-fill", daemon=True),
            threading.Thread(target=self._removal_loop, name="sandbox-pool-remove", daemon=True),
        ]
        if size > 0:
            for thread in self._threads:
                thread.start()

    # ------------------------------------------------------------------ claims

    def matches(self, limits: SandboxLimits, image: str | None) -> bool:
        """Whether this pool's containers were started as a sandbox for ``limits`` and ``image`` would be."""
        return (image or DEFAULT_IMAGE) == self.image and _container_config(limits) == _container_config(self.limits)

    def claim(self, limits: SandboxLimits, image: str | None = None) -> WarmSandbox | None:
        """Take a live, never-used container out of the pool for one evaluation, or None (start a fresh one).

        With none ready, a start under way is waited for (it is as far along as a fresh start would be, and it
        saves one); one that died, froze or was started from an image the tag no longer names is discarded. The
        pool starts the next container when this one's session lets it go (``REFILL_DEFER_SECONDS``).
        """
        if self.size == 0 or not self.matches(limits, image):
            return None
        t0 = time.monotonic()
        deadline = t0 + self.limits.startup_seconds
        while True:
            with self._cond:
                while not self._idle and self._refilling() and time.monotonic() < deadline:
                    self._cond.wait(deadline - time.monotonic())
                warm = self._idle.popleft() if self._idle else None
                if warm is not None:
                    self._claimed[warm.backend.container.id] = time.monotonic()
                self._cond.notify_all()
            if warm is None:
                return None
            if self._usable(warm):
                warm.claim_seconds = time.monotonic() - t0
                warm.remove_later = self._release  # the session lets it go through this when it ends
                return warm
            self._forget_claim(warm.backend.container)
            warm.discard()

    def _release(self, container: Any) -> None:
        """A claimed container's session is done with it: remove it, and start the next one."""
        self._forget_claim(container)
        self.remove_later(container)

    def _forget_claim(self, container: Any) -> None:
        with self._cond:
            if self._claimed.pop(container.id, None) is not None:
                self._cond.notify_all()

    def _refilling(self) -> bool:
        """Whether a container is starting or about to (the filler is due and not backing off after failures).
        Call with ``_cond`` held."""
        if self._closed:
            return False
        return self._starting > 0 or (
            self._failures == 0 and len(self._idle) + self._starting + self._in_use() < self.size
        )

    def _in_use(self) -> int:
        """Claimed containers whose sessions still run (claims older than ``REFILL_DEFER_SECONDS`` no longer
        count). Call with ``_cond`` held."""
        too_old = time.monotonic() - REFILL_DEFER_SECONDS
        for key in [key for key, at in self._claimed.items() if at < too_old]:
            del self._claimed[key]
        return len(self._claimed)

    def _usable(self, warm: WarmSandbox) -> bool:
        try:
            readable, _, _ = select.select([warm.ctl], [], [], 0)
            if readable:  # it said something unasked, or closed: the harness is gone
                log.warning("pooled sandbox %s closed its channel; discarding it", warm.run.path.name)
                return False
            protocol.send(warm.ctl, {"type": "ping"})
            reply = protocol.recv(
                warm.ctl, max_size=protocol.MAX_FRAME_FROM_SANDBOX, deadline=time.monotonic() + PING_SECONDS
            )
            protocol.expect(reply, "pong", {})
            current = warm.backend.client.images.get(self.image).id
        except (protocol.ProtocolError, OSError, DockerException, requests.RequestException) as exc:
            log.warning("pooled sandbox %s is not usable (%s); discarding it", warm.run.path.name, exc)
            return False
        if current != warm.backend.image_digest:
            log.info("image %s was rebuilt since pooled sandbox %s started; discarding it", self.image, warm.run.path)
            return False
        return True

    # ------------------------------------------------------------------ background work

    def _fill(self) -> None:
        while True:
            with self._cond:
                while not self._closed and len(self._idle) + self._starting + self._in_use() >= self.size:
                    self._cond.wait(REFILL_DEFER_SECONDS if self._claimed else None)
                if self._closed:
                    return
                self._starting += 1
            warm: WarmSandbox | None = None
            try:
                warm = self._start_one()
            except Exception as exc:  # the engine or the image: keep trying, less and less often
                self._failures += 1
                log.log(
                    logging.WARNING if self._failures == 1 else logging.DEBUG,
                    "could not start a pooled sandbox (%s); retrying in the background",
                    exc,
                )
            with self._cond:
                self._starting -= 1
                keep = warm is not None and not self._closed
                if keep:
                    assert warm is not None
                    self._idle.append(warm)
                    self._failures = 0
                self._cond.notify_all()
                if self._failures:
                    self._cond.wait(min(MAX_BACKOFF_SECONDS, 0.5 * 2**self._failures))
            if warm is not None and not keep:
                warm.discard()

    def _start_one(self) -> WarmSandbox:
        """Start one container with an empty bundle directory and wait until its harness has connected."""
        run = RunDir.create()
        listener = ctl = None
        backend: DockerBackend | None = None
        try:
            bundle_dir = run.path / BUNDLE_DIR
            bundle_dir.mkdir(mode=0o755)
            backend = DockerBackend(self.limits, image=self.image)
            channel_dir, listener = run.new_channel(backend.sandbox_uid)
            nonce = secrets.token_hex(16)
            t0 = time.monotonic()
            deadline = t0 + self.limits.startup_seconds
            backend.start(channel_dir, bundle_dir, nonce=nonce, await_load=True)
            self.started += 1
            ctl = _accept(listener, backend, deadline)
            hello = protocol.recv(ctl, max_size=protocol.MAX_FRAME_FROM_SANDBOX, deadline=deadline)
            protocol.expect(hello, "sim", {"fingerprint": str, "nonce": str})
            if hello["nonce"] != nonce:
                raise RuntimeError("the pooled sandbox's first connection did not carry its start nonce")
            return WarmSandbox(
                run=run,
                channel_dir=channel_dir,
                listener=listener,
                ctl=ctl,
                backend=backend,
                sim_fingerprint=hello["fingerprint"],
                start_seconds=time.monotonic() - t0,
                remove_later=self.remove_later,
            )
        except BaseException:
            for sock in (ctl, listener):
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.close()
            if backend is not None:
                backend.close()
            run.remove()
            raise

    def remove_later(self, container: Any) -> None:
        """Remove a used or discarded container in the background (at once if the pool is closed)."""
        if self._closed or self.size == 0:
            _remove(container)
        else:
            self._removals.put(container)

    def _removal_loop(self) -> None:
        while (container := self._removals.get()) is not None:
            _remove(container)

    # ------------------------------------------------------------------ shutdown

    def idle(self) -> int:
        """Containers ready to be claimed now."""
        with self._cond:
            return len(self._idle)

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the pool is full (``size`` idle containers); False if it is not within ``timeout`` s."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self._idle) < self.size:
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    return False
                self._cond.wait(left)
            return True

    def drain(self, timeout: float = 60.0) -> None:
        """Wait until the background removals queued so far are done."""
        done = threading.Event()
        self._removals.put(_Marker(done))
        done.wait(timeout)

    def close(self) -> None:
        """Stop refilling, remove the idle containers and finish the background removals (idempotent)."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            idle = list(self._idle)
            self._idle.clear()
            self._cond.notify_all()
        for warm in idle:
            warm.discard()
        if self.size > 0:
            self._threads[0].join()  # a start under way ends first; its container is discarded
            self._removals.put(None)
            self._threads[1].join()


class _Marker:
    """A removal-queue entry that only signals that everything queued before it is done."""

    def __init__(self, event: threading.Event) -> None:
        self.event = event


def _remove(container: Any) -> None:
    if isinstance(container, _Marker):
        container.event.set()
        return
    try:
        container.remove(force=True)
    except (NotFound, APIError):
        pass
    except (DockerException, requests.RequestException) as exc:  # the engine is away; the sweep removes it later
        log.warning("could not remove sandbox container %s: %s", container.id[:12], exc)


def _accept(listener: socket.socket, backend: DockerBackend, deadline: float) -> socket.socket:
    while (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([listener], [], [], min(left, 0.25))
        if readable:
            conn, _ = listener.accept()
            return conn
        if not backend.alive():
            raise RuntimeError(f"pooled sandbox exited before connecting ({backend.describe_exit()})")
    raise RuntimeError("pooled sandbox did not connect before the startup deadline")


# ---------------------------------------------------------------------------------------------- the process's pool

_installed: SandboxPool | None = None


def install(pool: SandboxPool) -> None:
    """Make ``pool`` the one ``open_sandbox`` claims from in this process (closed at exit if still installed)."""
    global _installed
    if _installed is not None and _installed is not pool:
        raise RuntimeError("a sandbox pool is already installed in this process; uninstall it first")
    _installed = pool
    atexit.register(_close_at_exit)


def installed() -> SandboxPool | None:
    return _installed


def uninstall() -> SandboxPool | None:
    """Stop ``open_sandbox`` claiming from the installed pool and return it (the caller closes it)."""
    global _installed
    pool, _installed = _installed, None
    return pool


def _close_at_exit() -> None:
    pool = uninstall()
    if pool is not None:
        pool.close()
