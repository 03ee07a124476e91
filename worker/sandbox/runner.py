"""The trusted side of a sandboxed evaluation: the authoritative simulator drives an untrusted policy step by step.

::

    with open_sandbox(bundle_dir, backend="docker", limits=SandboxLimits()) as session:
        outcome = session.run_episode(EpisodeJob("lab", scenario, episode, policy_seed(...)))

One sandbox (container or process) serves all episodes of a session; each episode runs in a process of its own that
imports the policy afresh (``layersched.worker.sandbox.harness``), so no episode can hand anything to another. This
module holds the session (the sandbox's start, handshake, scenarios, replacement and end); ``driver`` plays each
episode: per decision the worker sends the decision's payload and reads one reply; the reply is parsed strictly and
the action checked by the job's track's authoritative simulator (``layersched.sim.tracks``: ``TrustedEpisode.check``).
There is no fallback action: the first bad reply ends the episode with a status and a message naming the step and
the offending value. Scores come only from this side's simulator. The sandbox never sees a task before it has
committed to the previous action; the next task is sent right after that check, so the sandbox's decision and the
simulator's step run at the same time.

A docker sandbox may come from a warm pool (``layersched.worker.sandbox.pool``): a container started before the
evaluation, never used, into whose mounted bundle directory the bundle is copied; it too serves this session only.

If the sandbox itself breaks (the harness dies or stops answering), the session replaces it before the next
episode (``restarts`` counts how often; a replacement is always a freshly started sandbox). ``close()`` always
removes it (a pooled container in the pool's background thread); the docker backend also sweeps containers left by
dead workers, and run directories of dead workers are removed by the next session (``run_dirs``: by lock, not PID).

What the sandbox writes (tracebacks, bad values, output) is untrusted text: it is cut here (``MAX_TRACEBACK_CHARS``,
``MAX_MESSAGE_CHARS``, ``wire.MAX_VALUE_CHARS``) and, for a hidden episode, never shown to the participant
(``layersched.server.visibility``): an outcome carries the ``step`` at fault for that.

Statuses: ``ok``, ``invalid_action``, ``protocol_error``, ``timeout``, ``memory_exceeded``, ``crash``,
``import_error`` (participant's fault) and ``infrastructure_error`` (the service's fault: never counted against a
participant's quota).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import secrets
import select
import shutil
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, NoReturn

from layersched.sim.tracks import TrustedSimulator, get_track
from layersched.sim.tracks.signature import checked_parameter_names
from layersched.sim.version import SIM_VERSION
from layersched.worker.sandbox import protocol
from layersched.worker.sandbox.backend import Backend, BackendName, BackendUnavailable, Detachable
from layersched.worker.sandbox.driver import EpisodeDriver, InfrastructureFault
from layersched.worker.sandbox.limits import SandboxLimits
from layersched.worker.sandbox.memory_accounting import (
    MemoryHit,
    killed_by_the_limit,
    past_the_deadline,
    refusal_at_the_limit,
)
from layersched.worker.sandbox.outcomes import EpisodeJob, EpisodeOutcome, HiddenEpisodeRefused, SandboxError, Status
from layersched.worker.sandbox.reports import (
    IMPORT_ERROR_FIELDS,
    MAX_MESSAGE_CHARS,
    MAX_TRACEBACK_CHARS,
    READY_FIELDS,
    signal_name,
)
from layersched.worker.sandbox.run_dirs import RunDir, sweep_dead_run_dirs
from layersched.worker.sandbox.staging import stage_bundle
from layersched.worker.sandbox.wire import scenario_frame, sim_fingerprint

if TYPE_CHECKING:
    from layersched.worker.sandbox.pool import SandboxPool, WarmSandbox

log = logging.getLogger(__name__)

# How long a sandbox whose channel was lost gets to show as stopped (a kill from outside is not seen at once).
GONE_SECONDS = 2.0


# ---------------------------------------------------------------------------------------------- session


@dataclass
class _Startup:
    """How the sandbox's start went: ``status`` is set when it failed and every episode reports it."""

    status: Status | None = None
    message: str = ""
    stdout: str = ""
    stderr: str = ""
    stdout_dropped: int = 0
    stderr_dropped: int = 0
    info: dict[str, Any] = field(default_factory=dict)


class SandboxSession:
    """One submission's sandbox. Use ``open_sandbox``; call ``run_episode`` per episode and ``close`` at the end."""

    def __init__(
        self,
        bundle_dir: Path,
        backend: Backend,
        limits: SandboxLimits,
        allow_process_for_hidden: bool,
        *,
        warm: WarmSandbox | None = None,
    ):
        """``warm``: a container claimed from a warm pool (``sandbox_pool``), started before this evaluation and
        never used; the bundle is copied into its run directory and its harness told to import it. Otherwise (and
        whenever the sandbox must be replaced) a fresh one is started for this session."""
        self.limits = limits
        self.allow_process_for_hidden = allow_process_for_hidden
        self.sim_version = SIM_VERSION
        self._backend = backend
        self._started = time.monotonic()
        self.submission_deadline = self._started + limits.submission_seconds
        # A pooled container is removed in the pool's background thread: the evaluation need not wait for it.
        self._remove_later: Callable[[Any], None] | None = None if warm is None else warm.remove_later
        self.pooled = warm is not None
        sweep_dead_run_dirs()
        self._run = warm.run if warm is not None else RunDir.create()
        self._run_dir = self._run.path
        # The current start's channel directory (a new one per start) and the nonce its harness must echo.
        self._channel_dir: Path | None = None if warm is None else warm.channel_dir
        self._nonce = ""
        self._listener: socket.socket | None = None
        self._ctl: socket.socket | None = None
        self._simulators: dict[str, TrustedSimulator] = {}
        self._hashes: dict[int, tuple[Any, str]] = {}
        # The simulator fingerprint the harness reported before the policy was imported (None: not reported).
        self._sim_fingerprint: str | None = None
        self._scenarios_sent: set[str] = set()
        self.restarts = 0
        self.startup = _Startup()
        self.container_start_seconds = float("nan")
        if warm is not None:
            self._listener, self._ctl = warm.listener, warm.ctl
        try:
            # The checked copy; every start gets a fresh copy of it (``_fresh_bundle``), so that no sandbox reads
            # files a replaced one has read (page cache and all).
            self._staged, self.bundle_sha256 = stage_bundle(bundle_dir, self._run_dir, limits)
            self.bundle_dir = self._staged
        except BaseException:
            if warm is not None:
                self.teardown()  # the claimed container goes too: it is never handed to another evaluation
            self._run.remove()
            raise
        try:
            if warm is not None:
                self._start_warm(warm)
            else:
                self._start()
        except BaseException:  # e.g. the socket cannot be bound: leave nothing behind
            self.close()
            raise

    # ------------------------------------------------------------------ properties

    @property
    def backend(self) -> BackendName:
        return self._backend.name

    @property
    def image_digest(self) -> str:
        return self._backend.image_digest

    @property
    def ctl(self) -> socket.socket | None:
        return self._ctl

    @property
    def listener(self) -> socket.socket | None:
        return self._listener

    def memory_window_end(self, *, verdict: bool = True) -> MemoryHit | None:
        return self._backend.memory_window_end(verdict=verdict)

    @property
    def policy_parameters(self) -> tuple[str, ...]:
        return tuple(self.startup.info.get("parameters", ()))

    @property
    def memory_accounted(self) -> bool:
        return self._backend.memory_accounted

    @property
    def import_seconds(self) -> float:
        return float(self.startup.info.get("import_seconds", float("nan")))

    # ------------------------------------------------------------------ life cycle

    def _start(self) -> None:
        """Start the sandbox and wait for ``ready``; a failure is recorded in ``self.startup``, not raised."""
        self.startup = _Startup()
        self._scenarios_sent.clear()
        self._sim_fingerprint = None
        # A new channel directory for every start: the container being replaced still has the old one mounted
        # while it is removed, and must not reach this start's socket. The nonce proves that whoever connects
        # first is the harness this start launched.
        self._channel_dir, self._listener = self._run.new_channel(self._backend.sandbox_uid)
        self._nonce = secrets.token_hex(16)
        t0 = time.monotonic()
        deadline = min(t0 + self.limits.startup_seconds, self.submission_deadline)
        try:
            if self.restarts:
                self.bundle_dir = self._fresh_bundle()
            self._backend.start(self._channel_dir, self.bundle_dir, nonce=self._nonce)
        except Exception as exc:  # docker API errors, missing image, exec failures: the service's fault
            log.exception("sandbox backend %s failed to start", self._backend.name)
            self.startup.status = "infrastructure_error"
            self.startup.message = f"{self._backend.name} sandbox failed to start: {exc}"
            return
        self._ctl = self.accept(deadline, None)
        if self._ctl is None:
            self.startup.status = "infrastructure_error"
            self.startup.message = (
                f"{self._backend.name} sandbox did not connect within {deadline - t0:.1f} s "
                f"({self._backend.describe_exit()})"
            )
            self._close_backend()
            return
        self.container_start_seconds = time.monotonic() - t0
        self._handshake(deadline)

    def _fresh_bundle(self) -> Path:
        """A new copy of the staged bundle (new files, not links: a link would share the page cache) for a sandbox
        that replaces another; the replaced one's copy is removed."""
        fresh = self._run_dir / f"bundle-{self.restarts}"
        shutil.copytree(self._staged, fresh, copy_function=shutil.copyfile)
        if self.bundle_dir != self._staged:
            shutil.rmtree(self.bundle_dir, ignore_errors=True)
        for path in [fresh, *fresh.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        return fresh

    def _start_warm(self, warm: WarmSandbox) -> None:
        """Hand a pooled container this session's bundle (already in its run directory) and wait for ``ready``."""
        self.startup = _Startup()
        self._scenarios_sent.clear()
        # Reported (with the nonce the pool gave it, which the pool checked) when it started, before any bundle
        # existed.
        self._sim_fingerprint = warm.sim_fingerprint
        deadline = min(time.monotonic() + self.limits.startup_seconds, self.submission_deadline)
        assert self._ctl is not None
        try:
            protocol.send(self._ctl, {"type": "load"})
        except OSError as exc:
            # It died after the pool checked it and before any of the participant's code ran: start a fresh one.
            log.warning("pooled sandbox died before it was used (%s); starting a fresh one", exc)
            self.teardown()
            self._start()
            return
        # No container started for this session: what it waited for was the claim (the pool's liveness checks).
        self.container_start_seconds = warm.claim_seconds
        self._handshake(deadline)

    def _handshake(self, deadline: float) -> None:
        """Read the harness's ``sim`` (if not read yet) and its ``ready`` or ``import_error``."""
        assert self._ctl is not None
        try:
            message = protocol.recv(self._ctl, max_size=protocol.MAX_FRAME_FROM_SANDBOX, deadline=deadline)
            if message["type"] == "sim":  # written before any code of the participant ran anywhere
                protocol.expect(message, "sim", {"fingerprint": str, "nonce": str})
                if message["nonce"] != self._nonce:
                    self.startup.status = "infrastructure_error"
                    self.startup.message = (
                        f"the first connection to the {self._backend.name} sandbox's channel did not carry its start "
                        "nonce: not the harness this start launched"
                    )
                    log.error("%s", self.startup.message)
                    self._close_backend()
                    return
                self._sim_fingerprint = message["fingerprint"]
                message = protocol.recv(self._ctl, max_size=protocol.MAX_FRAME_FROM_SANDBOX, deadline=deadline)
            kind = message["type"]
            if kind == "ready":
                protocol.expect(message, "ready", READY_FIELDS)
                self.startup.info = {k: message[k] for k in ("python", "numpy", "torch", "import_seconds")}
                self.startup.info["parameters"] = checked_parameter_names(message["parameters"])
                self._backend.memory_window_end(verdict=False)  # the import's window ends: the first episode's
                return
            if kind != "import_error":
                raise protocol.ProtocolError(f"expected 'ready' or 'import_error' from the sandbox, got {kind!r:.80}")
            protocol.expect(message, "import_error", IMPORT_ERROR_FIELDS)
            output = self.receive_output(message, deadline)
        except protocol.ChannelTimeout:
            self.startup.status = "timeout"
            self.startup.message = f"policy import did not finish within {self.limits.startup_seconds:g} s"
            memory = self._backend.memory_window_end()  # which limit the import hit, before the sandbox goes
            if memory is not None:
                self.startup.status = "memory_exceeded"
                self.startup.message = past_the_deadline(memory, self.limits.memory_bytes, None, self.startup.message)
            self._close_backend()
            return
        except (protocol.ProtocolError, OSError) as exc:
            status, why = self._sandbox_died()
            if status not in ("memory_exceeded", "infrastructure_error"):
                status = "import_error"
            self.startup.status = status
            self.startup.message = f"sandbox ended during the policy import ({why}): {exc}"
            self._close_backend()
            return
        self.startup.stdout, self.startup.stderr, self.startup.stdout_dropped, self.startup.stderr_dropped = output
        self.startup.status, self.startup.message = self._import_failure(message)
        if message["scratch_dirty"]:
            self.teardown()

    def _import_failure(self, report: dict[str, Any]) -> tuple[Status, str]:
        """Status and message of an ``import_error`` report: out of memory, or the import's traceback."""
        sig, limit = report["signal"], self.limits.memory_bytes
        memory = self._backend.memory_window_end()
        if sig == signal.SIGKILL and memory is not None:
            return "memory_exceeded", f"policy import ran out of memory: {killed_by_the_limit(memory, limit)}"
        tb = report["traceback"][-MAX_TRACEBACK_CHARS:].rstrip()
        if report["out_of_memory"]:  # MemoryError of an allocation refused: the limit if the accounting says so
            at_limit, why = refusal_at_the_limit(memory, limit, accounted=self._backend.memory_accounted)
            if at_limit:
                return "memory_exceeded", f"policy import ran out of memory: MemoryError{why}\n{tb}"
            return "import_error", f"policy import failed (MemoryError{why}):\n{tb}"
        if sig is not None:
            tb += f" (killed by signal {signal_name(sig)})"
        elif report["exit_code"]:
            tb += f" (exit code {report['exit_code']})"
        return "import_error", f"policy import failed:\n{tb}"

    def accept(self, deadline: float, ctl: socket.socket | None) -> socket.socket | None:
        """Accept a connection before ``deadline``; None if the sandbox dies, times out or ``ctl`` speaks first."""
        assert self._listener is not None
        watch: list[socket.socket] = [self._listener] + ([ctl] if ctl is not None else [])
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select(watch, [], [], min(left, 0.25))
            if self._listener in readable:
                conn, _ = self._listener.accept()
                return conn
            if ctl is not None and ctl in readable:
                return None
            if ctl is None and not self._backend_alive():
                return None
        return None

    def _restart(self) -> None:
        self.teardown()
        self.restarts += 1
        self._start()

    def teardown(self) -> None:
        for sock in (self._ctl, self._listener):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.close()
        self._ctl = self._listener = None
        self._close_backend()
        if self._channel_dir is not None:
            shutil.rmtree(self._channel_dir, ignore_errors=True)
            self._channel_dir = None

    def _close_backend(self) -> None:
        if self._remove_later is not None and isinstance(self._backend, Detachable):
            container = self._backend.detach()
            if container is not None:
                self._remove_later(container)
        else:
            self._backend.close()

    def close(self) -> None:
        """Stop and remove the sandbox and its run directory (idempotent)."""
        if self._ctl is not None:
            with contextlib.suppress(OSError, protocol.ProtocolError):
                protocol.send(self._ctl, {"type": "shutdown"})
        self.teardown()
        self._run.remove()

    def __enter__(self) -> SandboxSession:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ measurements

    def ping(self, n: int = 100) -> list[float]:
        """Round-trip times (s) of ``n`` tiny frames through the control channel: the channel's own cost."""
        if self._ctl is None:
            raise SandboxError(f"sandbox is not running ({self.startup.status}: {self.startup.message})")
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            protocol.send(self._ctl, {"type": "ping"})
            reply = protocol.recv(self._ctl, max_size=protocol.MAX_FRAME_FROM_SANDBOX, deadline=time.monotonic() + 5)
            times.append(time.perf_counter() - t0)
            protocol.expect(reply, "pong", {})
        return times

    # ------------------------------------------------------------------ episodes

    def run_episode(self, job: EpisodeJob) -> EpisodeOutcome:
        """Evaluate one episode in the sandbox; every failure is an outcome with a status, never an exception."""
        if job.episode.hidden and self.backend == "process" and not self.allow_process_for_hidden:
            raise HiddenEpisodeRefused(
                f"episode {job.episode.id!r} is hidden; the process backend is not isolated enough for hidden "
                "evaluation sets (pass allow_process_for_hidden=True only if an organiser decided so)"
            )
        run = EpisodeDriver(self, job)
        if time.monotonic() >= self.submission_deadline:
            return run.finish(
                "timeout",
                f"submission wall budget of {self.limits.submission_seconds:g} s "
                f"exhausted before episode {job.episode.id!r}",
            )
        if self._ctl is None and self.startup.status is None:
            self._restart()  # the previous episode broke the sandbox
        s = self.startup
        if s.status is not None:
            return run.finish(s.status, s.message, (s.stdout, s.stderr, s.stdout_dropped, s.stderr_dropped))
        outcome = run.play()
        if outcome.status == "crash" and run.sandbox_gone:
            return self._replay(job, outcome)
        return outcome

    def _replay(self, job: EpisodeJob, first: EpisodeOutcome) -> EpisodeOutcome:
        """The whole sandbox is gone from under an episode, and not by the memory limit: play it again in a new one.

        The engine restarting or the host killing containers is the service's fault, not the participant's. The
        policy cannot cause it: the harness is the first process of its PID namespace, which the policy's processes
        cannot kill or stop, and a sandbox that still runs but stopped answering is never replayed (that is the
        policy's ``crash``). A replay gives a policy a second look at an episode it has partly seen, so it must not be
        one it could ask for; and the replacement gets a fresh copy of the bundle (``_start``), so nothing the first
        play left in the bundle's files (their page cache) reaches it. If no new sandbox can be started the outcome is
        ``infrastructure_error`` (retried, no quota used).
        """
        log.warning("sandbox died under episode %s (%s); replaying it in a new sandbox", job.episode.id, first.message)
        if self._ctl is not None:
            self.teardown()
        self._restart()
        s = self.startup
        replay = EpisodeDriver(self, job)
        if s.status is not None:
            return replay.finish(s.status, s.message, (s.stdout, s.stderr, s.stdout_dropped, s.stderr_dropped))
        return replay.play()

    def _content_hash(self, job: EpisodeJob) -> str:
        """The job's scenario's content hash (its track's); it costs milliseconds (the lab's serialises the catalog),
        so it is kept per object."""
        known = self._hashes.get(id(job.scenario))
        if known is None or known[0] is not job.scenario:
            known = self._hashes[id(job.scenario)] = (job.scenario, get_track(job.track).scenario_hash(job.scenario))
        return known[1]

    def _scenario_key(self, job: EpisodeJob) -> str:
        """Name, track and content hash: what identifies a scenario to the simulators and the sandbox."""
        return f"{job.scenario_name}\0{job.track}\0{self._content_hash(job)}"

    def simulator(self, job: EpisodeJob) -> TrustedSimulator:
        key = self._scenario_key(job)
        simulator = self._simulators.get(key)
        if simulator is None:
            simulator = self._simulators[key] = get_track(job.track).simulator(job.scenario)
        return simulator

    def send_scenario(self, job: EpisodeJob) -> None:
        key = self._scenario_key(job)
        if key in self._scenarios_sent:
            return
        assert self._ctl is not None
        name, content_hash = job.scenario_name, self._content_hash(job)
        frame = scenario_frame(name, job.track, job.scenario, content_hash)
        protocol.send(self._ctl, frame)
        reply = protocol.recv(
            self._ctl, max_size=protocol.MAX_FRAME_FROM_SANDBOX, deadline=time.monotonic() + self.limits.startup_seconds
        )
        if reply.get("type") == "scenario_error":
            protocol.expect(reply, "scenario_error", {"name": str, "message": str})
            self._scenario_refused(frame, reply["message"])
        protocol.expect(reply, "scenario_ok", {"name": str, "hash": str})
        if reply["hash"] != content_hash:
            if self._sim_fingerprint is not None and self._sim_fingerprint == worker_sim_fingerprint():
                # The same simulator cannot hash the same scenario differently: the policy rewrote the harness's
                # reply. Blaming the service would hand the participant free, uncounted retries.
                raise protocol.ProtocolError(
                    f"the sandbox answered scenario hash {reply['hash']!r:.80} for {name!r}, but its simulator is "
                    f"the worker's (fingerprint {self._sim_fingerprint[:16]}), which computes {content_hash}: "
                    "the sandbox's reply was tampered with"
                )
            raise InfrastructureFault(
                f"the sandbox's simulator computes scenario hash {reply['hash']!r:.80}, the worker's is "
                f"{content_hash}: the image's layersched.sim differs from the worker's"
            )
        self._scenarios_sent.add(key)

    def _scenario_refused(self, frame: dict[str, Any], message: str) -> NoReturn:
        """The harness could not build a replica of ``frame``'s scenario (its track's module is missing from the
        image, say): the service's configuration, unless the track is part of a simulator identical to ours."""
        inside = frame["module"].startswith("layersched.sim.")
        if inside and self._sim_fingerprint is not None and self._sim_fingerprint == worker_sim_fingerprint():
            raise protocol.ProtocolError(
                f"the sandbox says it cannot build scenario {frame['name']!r} of track {frame['track']!r}, but its "
                "simulator is the worker's, which can: the sandbox's reply was tampered with"
            )
        raise InfrastructureFault(
            f"the sandbox cannot build scenario {frame['name']!r} of track {frame['track']!r} "
            f"(module {frame['module']!r}): {message[:MAX_MESSAGE_CHARS]}"
        )

    def receive_output(self, report: dict[str, Any], deadline: float) -> tuple[str, str, int, int]:
        """The stdout and stderr captures that follow the harness's ``report`` on the control connection, as
        (stdout, stderr, stdout dropped, stderr dropped). Raises ``ProtocolError`` for sizes out of bounds (the
        stream cannot be followed any more) or a capture that does not arrive."""
        assert self._ctl is not None
        texts = []
        for stream in ("stdout", "stderr"):
            size, dropped = report[f"{stream}_bytes"], report[f"{stream}_dropped"]
            if not (0 <= size <= self.limits.output_bytes and dropped >= 0):
                raise protocol.ProtocolError(
                    f"{stream} capture of {size} bytes ({dropped} dropped) is outside 0..{self.limits.output_bytes}"
                )
            data = protocol.recv_exact(self._ctl, size, deadline)
            texts.append((data.decode("utf-8", errors="replace"), dropped))
        return texts[0][0], texts[1][0], texts[0][1], texts[1][1]

    def _backend_alive(self) -> bool:
        """Whether the sandbox still runs; an engine that cannot be asked counts as not (startup then says why)."""
        try:
            return self._backend.alive()
        except BackendUnavailable:
            return False

    def _sandbox_died(self) -> tuple[Status, str]:
        """Classify the end of the whole sandbox (control connection lost)."""
        status, why, _ = self.sandbox_end()
        return status, why

    def sandbox_end(self) -> tuple[Status, str, bool]:
        """(status, why, gone): how the sandbox ended, and whether it is gone (not running any more)."""
        memory = self._backend.memory_window_end()
        if memory is not None:  # read on the host (the cgroup), so it holds even while the engine is away
            limit, why = self.limits.memory_bytes, self._backend.describe_exit()
            return "memory_exceeded", f"out of memory: {memory} (limit {limit} bytes; {why})", False
        try:
            alive = self._backend.alive()
        except BackendUnavailable as exc:
            # The engine is down or restarting (it stops its containers when it comes back): the service's fault.
            return "infrastructure_error", str(exc), False
        # A sandbox killed from outside takes a moment to show as stopped: give it that before calling it alive.
        settle = time.monotonic() + GONE_SECONDS
        while alive and time.monotonic() < settle:
            time.sleep(0.05)
            alive = self._backend_alive()
        why = self._backend.describe_exit()
        if alive:
            return "crash", "sandbox still running but stopped answering", False
        # Gone by a kill from outside (the engine, the host), or by an error of its own (its harness crashed, say
        # after the policy did something to it): only the first is replayed.
        return "crash", why, self._backend.killed_from_outside()


@functools.lru_cache(maxsize=1)
def worker_sim_fingerprint() -> str:
    """This worker's simulator fingerprint (``harness.sim_fingerprint``), computed once."""
    return sim_fingerprint()


def open_sandbox(
    bundle_dir: str | Path,
    *,
    backend: BackendName = "docker",
    limits: SandboxLimits | None = None,
    allow_process_for_hidden: bool = False,
    image: str | None = None,
    pool: SandboxPool | None = None,
) -> SandboxSession:
    """Start a sandbox for one submission's bundle (a ``.py`` file or a directory with ``policy.py``).

    ``backend="docker"`` is the production sandbox (``image`` defaults to ``layersched-sandbox:latest``);
    ``backend="process"`` is a weaker development sandbox that logs a warning and refuses hidden episodes unless
    ``allow_process_for_hidden``. Raises ``BundleError`` for a bundle that breaks the rules; failures of the
    sandbox itself (import errors, the engine) are reported by every ``run_episode`` as that episode's status.

    A docker sandbox is claimed from ``pool`` (default: the pool this process installed, if any) when it holds a
    live, never-used container with the same image and container limits; otherwise a fresh one is started.
    """
    limits = limits if limits is not None else SandboxLimits()
    impl: Backend
    if backend == "docker":
        from layersched.worker.sandbox import pool as sandbox_pool
        from layersched.worker.sandbox.docker_backend import DockerBackend

        pool = pool if pool is not None else sandbox_pool.installed()
        warm = pool.claim(limits, image) if pool is not None else None
        if warm is not None:
            return SandboxSession(Path(bundle_dir), warm.backend, limits, allow_process_for_hidden, warm=warm)
        impl = DockerBackend(limits, image=image)
    elif backend == "process":
        from layersched.worker.sandbox.process_backend import ProcessBackend

        impl = ProcessBackend(limits)
    else:
        raise SandboxError(f"unknown sandbox backend {backend!r}; choose 'docker' or 'process'")
    return SandboxSession(Path(bundle_dir), impl, limits, allow_process_for_hidden)
