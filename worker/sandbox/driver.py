"""One episode played over a sandbox's channel, on the trusted side: the decision loop and how the episode ended.

Per decision the driver sends the job's track's payload with a fresh nonce, reads one reply, parses it strictly
(``reports.REPLY_FIELDS``) and has the track's authoritative ``TrustedEpisode`` check and apply it; the next
decision's payload goes out as soon as the simulator announces it. The first bad reply ends the episode with a status
and a message naming the step and the offending value. How the episode process ended (its exit report, its output)
comes from the harness over the control connection.

The sandbox it plays in is a ``SandboxHost`` (``runner.SandboxSession``): the driver needs its channel, limits and
simulators, and to learn how a sandbox that went away ended.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import select
import signal
import socket
import time
from typing import Any, Protocol

from layersched.sim.episodes import trace_hash
from layersched.sim.errors import PolicyError
from layersched.sim.tracks import TrustedSimulator, get_track
from layersched.sim.tracks.signature import in_own_names
from layersched.worker.sandbox import protocol
from layersched.worker.sandbox.limits import SandboxLimits
from layersched.worker.sandbox.memory_accounting import (
    MemoryHit,
    killed_by_the_limit,
    past_the_deadline,
    refusal_at_the_limit,
)
from layersched.worker.sandbox.outcomes import EpisodeJob, EpisodeOutcome, EpisodeTiming, Status
from layersched.worker.sandbox.reports import (
    ERROR_KINDS,
    EXITED_FIELDS,
    MAX_TRACEBACK_CHARS,
    REPLY_FIELDS,
    cut_message,
    signal_name,
    storable,
)
from layersched.worker.sandbox.wire import MAX_VALUE_CHARS

log = logging.getLogger(__name__)

# How long an episode process that was told to end gets to exit (and flush its output) before it is killed.
END_GRACE_SECONDS = 1.0


class SandboxHost(Protocol):
    """What an episode needs of the sandbox it plays in (``runner.SandboxSession`` is one)."""

    limits: SandboxLimits

    @property
    def submission_deadline(self) -> float:
        """When the submission's wall budget runs out (``time.monotonic()``)."""
        ...

    @property
    def ctl(self) -> socket.socket | None:
        """The harness's control connection (None once the sandbox is torn down)."""
        ...

    @property
    def listener(self) -> socket.socket | None:
        """Where episode processes connect."""
        ...

    @property
    def policy_parameters(self) -> tuple[str, ...]:
        """The policy's parameter names as its sandbox reported them (checked identifiers), or none."""
        ...

    def simulator(self, job: EpisodeJob) -> TrustedSimulator: ...

    def send_scenario(self, job: EpisodeJob) -> None:
        """Make sure the harness holds the job's scenario; raises ``InfrastructureFault`` if it cannot."""
        ...

    def accept(self, deadline: float, ctl: socket.socket | None) -> socket.socket | None:
        """An episode process's connection, or None if it does not come (or ``ctl`` speaks first)."""
        ...

    def sandbox_end(self) -> tuple[Status, str, bool]:
        """How the whole sandbox ended: (status, why, gone)."""
        ...

    @property
    def memory_accounted(self) -> bool:
        """Whether ``memory_window_end`` counts the memory limit (its None then means "not hit")."""
        ...

    def memory_window_end(self, *, verdict: bool = True) -> MemoryHit | None:
        """How the sandbox's memory limit was hit since the last call, by its accounting on the host (None: not hit,
        or the backend cannot tell); starts the next window. ``verdict`` False: the answer is not needed (where it
        would cost a request to the engine, none is made)."""
        ...

    def teardown(self) -> None:
        """Stop the sandbox; the next episode starts a new one."""
        ...

    def receive_output(self, report: dict[str, Any], deadline: float) -> tuple[str, str, int, int]:
        """The output captures that follow an ``exited`` report: (stdout, stderr, and their dropped counts)."""
        ...


class InfrastructureFault(Exception):
    """The service failed during an episode (simulator mismatch, channel setup)."""


class EpisodeDriver:
    """The state of one episode being played in ``session``'s sandbox; ``play`` returns its outcome."""

    def __init__(self, session: SandboxHost, job: EpisodeJob) -> None:
        self.s = session
        self.job = job
        self.actions: list[int] = []
        self._nonces = protocol.Nonces()
        # Set by _announce: the nonce and send time of the decision the sandbox is deciding now.
        self._nonce = 0
        self._sent_at = 0.0
        self._next_step = 0
        self._announced = False
        self._send_seconds = session.limits.decision_seconds / 2
        self.conn: socket.socket | None = None
        self.sandbox_end: tuple[Status, str] | None = None
        # The sandbox was found gone (not running) when the episode lost it: only then may the episode be replayed.
        self.sandbox_gone = False
        self.step: int | None = None  # the step being decided (None before the first task is sent)
        self.output: tuple[str, str, int, int] = ("", "", 0, 0)  # stdout, stderr and their drop counts
        # How the memory limit was hit while the episode ran (the host's accounting, read at its exit report).
        self.memory: MemoryHit | None = None

    def finish(
        self,
        status: Status,
        message: str,
        output: tuple[str, str, int, int] = ("", "", 0, 0),
        metrics: Any = None,
        timing: EpisodeTiming | None = None,
    ) -> EpisodeOutcome:
        out, err, out_dropped, err_dropped = output
        return EpisodeOutcome(
            scenario_name=self.job.scenario_name,
            episode_id=self.job.episode.id,
            status=status,
            message=storable(cut_message(message)),  # whatever the sandbox managed to put in it
            metrics=metrics,
            trace_hash=trace_hash(self.actions),
            n_actions=len(self.actions),
            step=None if status == "ok" else self.step,
            stdout=storable(out),
            stderr=storable(err),
            stdout_dropped=out_dropped,
            stderr_dropped=err_dropped,
            timing=timing,
            actions=tuple(self.actions),
        )

    def play(self) -> EpisodeOutcome:
        s, job = self.s, self.job
        limits = s.limits
        started = time.monotonic()
        episode_deadline = min(started + limits.episode_seconds, s.submission_deadline)
        # The replica learns the start message, never the workload's generator.
        episode = s.simulator(job).episode(job.episode.workload_rng())
        # The episode process names it in its hello: a connection an earlier episode's process opened and left
        # waiting cannot pose as this episode's.
        token = secrets.token_hex(16)
        told = False  # whether the harness has heard of this episode (and so has a process to report on)
        try:
            # Before the harness hears of the episode, so that no process of it can time this: a track that drew
            # its whole workload here would tell the episode's process about the future by how long that takes
            # (tests/redteam/test_track_attacks.py). The spare process waiting for its assignment meanwhile can
            # time it, so the tracks' first decisions draw the present only (workflows-v1 and jobs-v1 draw lazily).
            payload = episode.first_decision()
        except Exception as exc:  # the track's own code: the service's fault, as in check and advance
            log.exception("track %s failed preparing episode %s", job.track, job.episode.id)
            return self.finish("infrastructure_error", f"track {job.track}: the first decision failed: {exc!r}")
        try:
            s.send_scenario(job)
            assert s.ctl is not None and s.listener is not None
            refuse_waiting_connections(s.listener)
            # The harness learns which episode and scenario, never its nodes or tasks (they go to the episode
            # process only): the process every episode is forked from holds nothing of any hidden episode.
            protocol.send(
                s.ctl, {"type": "episode", "episode_id": job.episode.id, "scenario": job.scenario_name, "token": token}
            )
            told = True
            self.conn = s.accept(
                min(time.monotonic() + limits.decision_seconds + limits.startup_seconds, episode_deadline), s.ctl
            )
            if self.conn is None:
                return self._ended("crash", "episode process ended before connecting")
            reader = protocol.FrameReader(self.conn, max_size=protocol.MAX_FRAME_FROM_SANDBOX)
            hello = reader.recv(deadline=time.monotonic() + limits.decision_seconds)
            protocol.expect(hello, "hello", {"episode_id": str, "token": str})
            if hello["episode_id"] != job.episode.id or hello["token"] != token:
                raise protocol.ProtocolError(
                    f"hello is for episode {hello['episode_id']!r:.80} with another token, not this episode's "
                    f"({job.episode.id!r})"
                )
        except InfrastructureFault as exc:
            if not told:
                return self.finish("infrastructure_error", str(exc))
            return self._abort("infrastructure_error", str(exc))
        except protocol.ChannelClosed as exc:
            return self._ended("crash", f"episode process ended before its first step ({exc})")
        except protocol.ChannelTimeout:
            return self._abort("timeout", "episode process did not start within the deadline", hung=True)
        except protocol.ProtocolError as exc:
            return self._abort("protocol_error", f"before step 0: {exc}")
        except ConnectionError as exc:
            # Broken pipe or reset: the sandbox's end of the channel was closed, which the policy can do (it runs in
            # the harness's processes). That is how the sandbox ended, not a failure of the service.
            return self._ended("crash", f"the sandbox closed its channel before step 0 ({exc})")
        except OSError as exc:
            return self._abort("infrastructure_error", f"channel failed before step 0: {exc}")

        step = self.step = 0
        reply_wait = 0.0
        nonce = self._nonces.next()
        start = protocol.encode({"type": "start", "seed": job.policy_seed, "episode": episode.start_message()})
        sent_at = time.monotonic()
        setup = sent_at - started
        announce = self._announce
        more = payload is not None
        self._send(start + protocol.encode_task(0, payload, nonce) if more else start)
        while more:
            if time.monotonic() >= episode_deadline:
                return self._abort("timeout", self._budget_message(step, episode_deadline), hung=True)
            decision_deadline = min(sent_at + limits.decision_seconds, episode_deadline)
            try:
                reply = reader.recv(decision_deadline, poll_seconds=limits.poll_seconds)
                reply_wait += time.monotonic() - sent_at
            except protocol.ChannelTimeout:
                if decision_deadline < episode_deadline:
                    msg = f"step {step}: no action within the per-decision deadline of {limits.decision_seconds:g} s"
                else:
                    msg = self._budget_message(step, episode_deadline)
                return self._abort("timeout", msg, hung=True)
            except (protocol.ChannelClosed, OSError):  # EOF or reset: the process is gone
                return self._ended("crash", f"step {step}: episode process ended without replying")
            except protocol.ProtocolError as exc:
                return self._abort("protocol_error", f"step {step}: {exc}")
            try:
                action = self._parse_reply(reply, step, nonce)
                action = episode.check(action, step)
            except protocol.ProtocolError as exc:
                return self._abort("protocol_error", str(exc))
            except PolicyError as exc:  # worded in the student's own parameter names, as ``validate`` words it
                arguments = get_track(job.track).policy_arguments
                return self._abort("invalid_action", in_own_names(str(exc), arguments, self.s.policy_parameters))
            except _AllocationRefused as exc:
                return self._refused(exc.step, exc.traceback)
            except _PolicyRaised as exc:
                return self._abort(exc.status, str(exc))
            except Exception as exc:  # the track's own code failed on a reply: the service's fault, not the policy's
                log.exception("track %s failed checking step %d of episode %s", job.track, step, job.episode.id)
                return self._abort("infrastructure_error", f"track {job.track}: step {step}: the check failed: {exc!r}")
            self.actions.append(action)
            # The simulator announces the next decision as soon as it knows it (the lab's: before applying this
            # action, which the policy has committed to), and _announce sends it at once.
            self._next_step = step + 1
            self._announced = False
            try:
                more = episode.advance(action, announce)
            except Exception as exc:  # as above: a checked action must always apply
                log.exception("track %s failed applying step %d of episode %s", job.track, step, job.episode.id)
                return self._abort("infrastructure_error", f"track {job.track}: step {step}: the step failed: {exc!r}")
            if more and not self._announced:
                return self._abort(
                    "infrastructure_error", f"track {job.track}: step {step}: the simulator went on without a decision"
                )
            nonce, sent_at = self._nonce, self._sent_at
            step = self.step = step + 1

        ended = time.monotonic()
        self._send_end()
        report = self._timing(reader)
        self._exit_report(kill_after=END_GRACE_SECONDS, judge_memory=False)
        output = self.output
        try:
            metrics = episode.metrics()
        except Exception as exc:  # the track's own code: the service's fault, as in check and advance
            log.exception("track %s failed measuring episode %s", job.track, job.episode.id)
            return self.finish("infrastructure_error", f"track {job.track}: the metrics failed: {exc!r}", output)
        timing = None
        if report is not None:
            timing = EpisodeTiming(
                decisions=report["decisions"],
                setup_seconds=setup,
                end_seconds=time.monotonic() - ended,
                reply_wait_seconds=reply_wait,
                policy_seconds=float(report["policy_seconds"]),
                replica_seconds=float(report["replica_seconds"]),
                task_wait_seconds=float(report["wait_seconds"]),
                send_seconds=float(report["send_seconds"]),
            )
        return self.finish("ok", "", output, metrics, timing)

    def _announce(self, payload: Any) -> None:
        """Send the next decision's payload with a fresh nonce (the simulator calls it from ``advance``)."""
        self._nonce = nonce = self._nonces.next()
        self._announced = True
        self._sent_at = time.monotonic()
        self._send(protocol.encode_task(self._next_step, payload, nonce))

    def _send(self, data: bytes) -> None:
        """Send ``data`` to the episode process with a deadline of at least half a decision's; if it is gone or
        stopped reading, the read that follows says how the decision ended.

        The send needs a deadline of its own: a reply found by polling leaves the socket blocking, one read near
        its deadline leaves a tiny timeout, and a payload larger than the socket's buffer must not wait forever
        for a sandbox that stopped reading. Setting it costs a system call, so it is set only when short."""
        conn = self.conn
        assert conn is not None
        timeout = conn.gettimeout()
        if timeout is None or timeout < self._send_seconds:
            conn.settimeout(self._send_seconds)
        with contextlib.suppress(OSError):
            conn.sendall(data)

    def _timing(self, reader: protocol.FrameReader) -> dict[str, Any] | None:
        """The harness's ``timing`` frame, sent when it gets ``end``; None if it does not come or is malformed
        (it only feeds benchmarks, so a policy that spoils it harms nobody but its own figures)."""
        number = (int, float)
        try:
            frame = reader.recv(time.monotonic() + END_GRACE_SECONDS)
            protocol.expect(
                frame,
                "timing",
                {
                    "decisions": int,
                    "policy_seconds": number,
                    "replica_seconds": number,
                    "wait_seconds": number,
                    "send_seconds": number,
                },
            )
        except (protocol.ProtocolError, OSError):
            return None
        return frame

    # ------------------------------------------------------------------ replies

    def _parse_reply(self, reply: dict[str, Any], step: int, nonce: int) -> object:
        kind = reply["type"]
        fields = REPLY_FIELDS
        if kind not in fields:
            raise protocol.ProtocolError(f"step {step}: expected an 'action' frame, got {kind!r:.80}")
        # Every text below is the policy's: cut to a few hundred characters before it goes anywhere.
        try:
            protocol.expect(reply, kind, fields[kind])
        except protocol.ProtocolError as exc:  # name the step, like every other message of an episode
            raise protocol.ProtocolError(f"step {step}: {exc}") from None
        if reply["step"] != step:
            raise protocol.ProtocolError(f"step {step}: reply is for step {reply['step']}, expected step {step}")
        if reply["nonce"] != nonce:  # the step's number is predictable, its nonce is not
            raise protocol.ProtocolError(
                f"step {step}: reply carries nonce {reply['nonce']}, not the one sent with task {step}: "
                "it was written before the task arrived (an early reply) or forged"
            )
        if kind == "action":
            return reply["action"]
        if kind == "bad_action":
            value, value_type = reply["value"][:MAX_VALUE_CHARS], reply["value_type"][:MAX_VALUE_CHARS]
            raise PolicyError(
                f"step {step}: policy returned {value} of type {value_type}, "
                f"expected {get_track(self.job.track).action_description}",
                step=step,
                value=value,
            )
        if reply["kind"] not in ERROR_KINDS:
            raise protocol.ProtocolError(f"step {step}: error frame of unknown kind {reply['kind']!r:.80}")
        tb = reply["traceback"][-MAX_TRACEBACK_CHARS:].rstrip()
        if reply["kind"] == "import":
            raise _PolicyRaised("import_error", f"policy import failed in this episode's process:\n{tb}")
        # An allocation refused (a MemoryError not of the policy's own raise), at this step or at the import of this
        # episode's process (its traceback says which): whether that was the memory limit, the accounting says.
        if reply["kind"] == "memory":
            raise _AllocationRefused(step, tb)
        if reply["kind"] == "replica":
            raise _PolicyRaised("crash", f"step {step}: the policy's replica environment is broken\n{tb}")
        raise _PolicyRaised("crash", f"step {step}: policy raised an exception\n{tb}")

    def _budget_message(self, step: int, episode_deadline: float) -> str:
        if episode_deadline >= self.s.submission_deadline:
            return f"step {step}: submission wall budget of {self.s.limits.submission_seconds:g} s exhausted"
        return f"step {step}: episode wall budget of {self.s.limits.episode_seconds:g} s exhausted"

    # ------------------------------------------------------------------ endings

    def _abort(self, status: Status, message: str, *, hung: bool = False) -> EpisodeOutcome:
        """End the episode early and collect its output.

        A process that is waiting for its next task is told to end, so that it exits cleanly and its output is
        complete; a ``hung`` one (timeouts) is killed at once. A deadline that passed after the memory limit was hit
        (the sandbox's accounting says so) did not end the episode: the memory limit did, and the message says so
        first. On a loaded machine the deadline can pass between the out-of-memory kill and the end of the channel
        (the killed process frees its memory before its sockets close), or another process of the episode holds it.
        """
        if not hung:
            self._send_end()
        exited = self._exit_report(kill_after=0.0 if hung else END_GRACE_SECONDS, judge_memory=hung)
        if hung and self.memory is not None:
            status = "memory_exceeded"
            message = past_the_deadline(self.memory, self.s.limits.memory_bytes, self.step, message)
        elif hung and exited is None and self.sandbox_end is not None and self.sandbox_end[0] == "memory_exceeded":
            status, message = "memory_exceeded", f"{message}; the sandbox ended too ({self.sandbox_end[1]})"
        return self.finish(status, message, self.output)

    def _refused(self, step: int, tb: str) -> EpisodeOutcome:
        """End the episode whose policy was refused an allocation at ``step``: out of memory if the sandbox's memory
        accounting says its limit was hit in the episode (read at the exit report, every process of the episode
        gone; or, without one, by ``sandbox_end``), else the policy's exception. Where nothing counts the limit, the
        refusal was the limit (``memory_accounting.refusal_at_the_limit``)."""
        self._send_end()
        exited = self._exit_report(kill_after=END_GRACE_SECONDS)
        limit = self.s.limits.memory_bytes
        if exited is None and self.sandbox_end is not None and self.sandbox_end[0] == "memory_exceeded":
            message = f"step {step}: policy ran out of memory: MemoryError; the sandbox ended ({self.sandbox_end[1]})"
            return self.finish("memory_exceeded", f"{message}\n{tb}", self.output)
        at_limit, why = refusal_at_the_limit(self.memory, limit, accounted=self.s.memory_accounted)
        if at_limit:
            return self.finish(
                "memory_exceeded", f"step {step}: policy ran out of memory: MemoryError{why}\n{tb}", self.output
            )
        return self.finish("crash", f"step {step}: policy raised an exception (MemoryError{why})\n{tb}", self.output)

    def _send_end(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(OSError, protocol.ProtocolError):
                protocol.send(self.conn, {"type": "end"})

    def _ended(self, status: Status, message: str) -> EpisodeOutcome:
        """The episode process ended on its own (crash, OOM kill): say how."""
        exited = self._exit_report(kill_after=END_GRACE_SECONDS)
        if exited is None:
            if self.sandbox_end is None:
                died, why, self.sandbox_gone = self.s.sandbox_end()
            else:
                died, why = self.sandbox_end
            return self.finish(died, f"{message}; the sandbox ended too ({why})")
        sig, code = exited["signal"], exited["exit_code"]
        if sig is not None:
            if sig == signal.SIGKILL and self.memory is not None:
                status = "memory_exceeded"
                message = f"{message}: {killed_by_the_limit(self.memory, self.s.limits.memory_bytes)}"
            else:
                message = f"{message}: killed by signal {signal_name(sig)}"
        elif code is not None:
            message = f"{message}: exit code {code}"
        return self.finish(status, message, self.output)

    def _exit_report(self, *, kill_after: float, judge_memory: bool = True) -> dict[str, Any] | None:
        """Wait for the harness's ``exited`` frame, asking it to kill the episode process after ``kill_after`` s;
        ``judge_memory``: whether the episode's end needs to know if the memory limit was hit (``self.memory``).

        If the harness does not answer within the grace period the sandbox is broken: it is torn down and the next
        episode starts a new one.
        """
        s = self.s
        if self.conn is not None:
            with contextlib.suppress(OSError):
                self.conn.close()
            self.conn = None
        if s.ctl is None:
            return None
        try:
            killed = kill_after <= 0
            if killed:
                protocol.send(s.ctl, {"type": "kill"})
            deadline = time.monotonic() + (s.limits.kill_grace_seconds if killed else kill_after)
            while True:
                message: dict[str, Any]
                try:
                    message = protocol.recv(s.ctl, max_size=protocol.MAX_FRAME_FROM_SANDBOX, deadline=deadline)
                except protocol.ChannelTimeout:
                    if killed:
                        raise
                    protocol.send(s.ctl, {"type": "kill"})
                    killed = True
                    deadline = time.monotonic() + s.limits.kill_grace_seconds
                    continue
                if message["type"] == "exited":
                    protocol.expect(message, "exited", EXITED_FIELDS)
                    # Every process of the episode is gone: its memory window ends here (the next episode's process
                    # is forked after this report, so its import counts towards the next one).
                    self.memory = s.memory_window_end(verdict=judge_memory)
                    self.output = s.receive_output(message, deadline)
                    if message["scratch_dirty"]:
                        # Something of the episode could not be removed: the next episode gets a new sandbox.
                        s.teardown()
                    return message
                if message["type"] != "pong":
                    raise protocol.ProtocolError(f"expected an 'exited' frame, got {message['type']!r:.80}")
        except (protocol.ProtocolError, OSError) as exc:
            log.warning("sandbox did not report the end of episode %s (%s); replacing it", self.job.episode.id, exc)
            status, why, self.sandbox_gone = s.sandbox_end()
            self.sandbox_end = status, why
            s.teardown()  # the next episode starts a new sandbox
            return None


def refuse_waiting_connections(listener: socket.socket) -> None:
    """Close connections waiting on the listener before an episode starts: none can be its episode process's
    (that one connects only after being told which episode it serves), so they are an earlier process's."""
    while select.select([listener], [], [], 0)[0]:
        conn, _ = listener.accept()
        conn.close()


class _AllocationRefused(Exception):
    def __init__(self, step: int, traceback: str) -> None:
        super().__init__(f"step {step}: an allocation was refused")
        self.step, self.traceback = step, traceback


class _PolicyRaised(Exception):
    def __init__(self, status: Status, message: str) -> None:
        super().__init__(message)
        self.status = status
