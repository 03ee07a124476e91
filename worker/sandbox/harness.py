"""The sandbox's supervisor: starts one fresh episode process per episode and never runs code of the participant.

Runs *inside* the sandbox with the standard library, numpy and ``layersched.sim`` (and torch, which it imports
itself when the bundle uses it), as ``python3 -m layersched.worker.sandbox.harness --socket PATH --bundle DIR``.

* It makes itself non-dumpable (no process of the same user may ptrace it, read or write its memory or take its file
  descriptors), connects its control connection and reports its simulator's fingerprint with the start nonce the
  worker gave it (``sim``).
* It forks the first episode process (``layersched.worker.sandbox.episode_process``), which imports the policy and
  tells it how that went; the harness answers ``ready`` or ``import_error`` (with the import's output).
* Per ``episode`` it hands the episode's id and scenario to the waiting episode process, which connects to the
  trusted side on a connection of its own (where it gets the episode's seed and nodes) and plays the episode. The
  harness captures its stdout/stderr (bounded, the rest counted), kills it on request (timeouts are the trusted
  side's decision) and reports how it ended (``exited``, the output following as raw bytes).
* After every episode, in a container (``--container``: a PID namespace and tmpfs scratch space of its own), it
  kills every other process of the container (it is their PID 1), waits until they are gone and empties ``/tmp``
  and ``/dev/shm``; only then does it fork the next episode's process, which imports the policy afresh.

So no episode can hand anything to another: every episode runs in a new import, every process of the last one is
gone, the scratch space is empty, System V IPC and POSIX message queues are switched off in the container
(``docker_backend``), and the process they are all forked from holds nothing an episode wrote: it never reads
their output into its own heap (``capture``) and never receives an episode's nodes or tasks. What the harness
reports is true because the participant's code never ran in it. ``--await-load`` (warm pool,
``layersched.worker.sandbox.pool``): the container starts before its bundle exists; after ``sim`` the harness waits,
answering pings, until the worker has copied the bundle in and sends ``load``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import platform
import select
import signal
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from layersched.sim.tracks import Replica
from layersched.sim.tracks.signature import checked_parameter_names
from layersched.worker.sandbox import protocol
from layersched.worker.sandbox.cache_guard import forbid_cache_control
from layersched.worker.sandbox.capture import Capture
from layersched.worker.sandbox.episode_process import (
    EXIT_HARNESS,
    EXIT_OK,
    Imported,
    bind_stdio,
    die_with_parent,
    import_policy,
    import_report,
    read_assignment,
    serve_episode,
)
from layersched.worker.sandbox.isolation import (
    SCRATCH_DIRS,
    empty_scratch,
    make_undumpable,
    others_alive,
    trusted_import_path,
)
from layersched.worker.sandbox.preload import preload_site_modules, preload_tracks
from layersched.worker.sandbox.wire import NONCE_ENV, replica_from_frame, sim_fingerprint

# How long the processes of an ended episode get to disappear after SIGKILL before the sandbox counts as unclean.
REAP_SECONDS = 2.0
# The first episode process's report of its import: a small frame (its traceback is cut to 20,000 characters).
MAX_IMPORT_REPORT = 256 * 1024
# A report pipe that closes without a report means the process is dying (the out-of-memory killer, an exit at
# import): how long its end may take to show.
REPORT_EXIT_SECONDS = 1.0


@dataclass
class _Spare:
    """An episode process forked ahead of its episode, importing the policy and then waiting on the pipe ``go``."""

    pid: int
    pidfd: int  # -1 once the process is reaped
    go: int  # write end of its assignment pipe; -1 once closed
    outputs: dict[int, Capture]  # read ends of its stdout and stderr still open, with where they are captured
    replicas: frozenset[str]  # the scenarios it inherited a replica of (others travel in the assignment)

    def close_go(self) -> None:
        if self.go >= 0:
            os.close(self.go)
            self.go = -1

    def reap(self) -> int:
        """Wait for the process (it has ended or been killed); its wait status."""
        _, status = os.waitpid(self.pid, 0)
        os.close(self.pidfd)
        self.pidfd = -1
        return status

    def read_output(self, readable: list[int]) -> None:
        for fd in [fd for fd in self.outputs if fd in readable]:
            if not self.outputs[fd].read_from(fd):
                os.close(fd)
                del self.outputs[fd]

    def drain(self, seconds: float = 0.2) -> None:
        """Read what is left in the output pipes; stop early if an escaped process keeps one open."""
        deadline = time.monotonic() + seconds
        while self.outputs and (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select(list(self.outputs), [], [], left)
            self.read_output(readable)
        for fd in self.outputs:
            os.close(fd)
        self.outputs.clear()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Harness:
    def __init__(
        self, socket_path: str, bundle: Path, output_bytes: int, *, container: bool = False, poll_seconds: float = 0.0
    ) -> None:
        self.socket_path = socket_path
        self.bundle = bundle
        self.output_bytes = output_bytes
        self.container = container
        self.poll_seconds = poll_seconds
        self.replicas: dict[str, Replica] = {}
        self.scenarios: dict[str, dict[str, Any]] = {}  # name -> its scenario frame, for spares older than it
        self.spare: _Spare | None = None
        # Something left between episodes (by a replaced spare's import) could not be cleaned up.
        self.dirty = False
        self.stdout, self.stderr = Capture(output_bytes), Capture(output_bytes)
        self.ctl = self._connect()

    def _connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(self.socket_path)
        return sock

    def send(self, message: dict[str, Any]) -> None:
        protocol.send(self.ctl, message, max_size=protocol.MAX_FRAME_FROM_SANDBOX)

    def send_with_output(self, message: dict[str, Any]) -> None:
        """``message`` with the captured output's sizes, then the output itself as raw bytes; the captures are
        emptied."""
        out, err = self.stdout, self.stderr
        sizes = {
            "stdout_bytes": out.size,
            "stderr_bytes": err.size,
            "stdout_dropped": out.dropped,
            "stderr_dropped": err.dropped,
        }
        self.send({**message, **sizes})
        for capture in (out, err):
            with capture.view() as view:
                self.ctl.sendall(view)
            capture.reset()

    # ------------------------------------------------------------------ start

    def await_load(self) -> bool:
        """Warm pool: wait, idle, until the worker has copied a bundle in and says ``load`` (True), or lets this
        never-used sandbox go (``shutdown`` or a closed channel: False). Pings are answered so that the worker can
        tell a live harness from a dead or frozen one before it hands it an evaluation."""
        while True:
            try:
                message = protocol.recv(self.ctl, max_size=protocol.MAX_FRAME_TO_SANDBOX)
            except protocol.ChannelClosed:
                return False
            kind = message["type"]
            if kind == "load":
                return True
            if kind == "ping":
                self.send({"type": "pong"})
            elif kind == "shutdown":
                return False
            else:
                raise protocol.ProtocolError(f"unexpected {kind!r} frame while waiting for a bundle")

    def start(self) -> bool:
        """Fork the first episode process and relay how its import went: ``ready`` (True) or ``import_error``."""
        started = time.monotonic()
        preload_tracks()
        preloaded = preload_site_modules(self.bundle)
        report_r, report_w = os.pipe()
        spare = self._fork_spare((report_r, report_w))
        os.close(report_w)
        report, ended = self._await_report(spare, report_r)
        if ended is None and report is not None and report["ok"]:
            self.spare = spare
            torch = sys.modules.get("torch")
            self.send(
                {
                    "type": "ready",
                    "python": platform.python_version(),
                    "numpy": np.__version__,
                    "torch": None if torch is None else str(torch.__version__),
                    "preloaded": preloaded,
                    "import_seconds": time.monotonic() - started,
                    # Written by a process the policy ran in: checked again on the worker's side.
                    "parameters": list(checked_parameter_names(report["parameters"])),
                }
            )
            return True
        clean = self._end_and_clean(spare)  # still waiting for an episode if its import failed
        if report is not None and report["traceback"]:
            why = report["traceback"]
        elif ended is None:
            why = "the episode process's report of its import was malformed"
        else:
            why = "the episode process ended during the policy's import"
        self.send_with_output(
            {
                "type": "import_error",
                "traceback": why[-20000:],
                # An allocation refused (MemoryError): the process sandbox's address-space bound, say.
                "out_of_memory": report is not None and report["out_of_memory"],
                # How it ended, if it ended by itself (killed by the out-of-memory killer, say: the worker reads
                # the memory accounting on the host, where the policy's processes cannot reach it).
                **(_wait_status(ended) if ended is not None else {"exit_code": None, "signal": None}),
                "scratch_dirty": not clean or self.dirty,
            }
        )
        return False

    def _await_report(self, spare: _Spare, report_r: int) -> tuple[dict[str, Any] | None, int | None]:
        """The first episode process's import report, reading its output meanwhile. Returns (report or None,
        wait status if it ended). Answers pings; a ``shutdown`` or a closed channel ends the harness."""
        chunks: list[bytes] = []
        received = 0
        closed_at: float | None = None  # when the report pipe closed without a report: the process is dying
        try:
            while True:
                watch = [self.ctl.fileno(), spare.pidfd, *spare.outputs] + ([report_r] if closed_at is None else [])
                timeout = None if closed_at is None else max(0.0, closed_at + REPORT_EXIT_SECONDS - time.monotonic())
                readable, _, _ = select.select(watch, [], [], timeout)
                spare.read_output(readable)
                if report_r in readable:
                    chunk = os.read(report_r, 1 << 16)
                    received += len(chunk)
                    chunks.append(chunk)
                    if received > MAX_IMPORT_REPORT:
                        return None, None
                    if not chunk and received:
                        return _parse_report(b"".join(chunks)), None
                    if not chunk:
                        closed_at = time.monotonic()
                if self.ctl.fileno() in readable:
                    self._control_between_episodes()
                if spare.pidfd in readable:
                    status = spare.reap()
                    spare.drain()
                    return None, status
                if closed_at is not None and time.monotonic() >= closed_at + REPORT_EXIT_SECONDS:
                    return None, None  # closed its report pipe and lives on: a malformed report
        finally:
            os.close(report_r)

    # ------------------------------------------------------------------ serving

    def serve(self) -> None:
        try:
            self._serve()
        finally:
            if self.spare is not None:
                self._discard(self.spare)

    def _serve(self) -> None:
        while True:
            try:
                message = protocol.recv(self.ctl, max_size=protocol.MAX_FRAME_TO_SANDBOX)
            except protocol.ChannelClosed:
                return  # the worker is gone: so are we
            kind = message["type"]
            if kind == "scenario":
                new_module = message.get("module") not in sys.modules
                try:
                    replica, content_hash = replica_from_frame(message)
                except Exception as exc:  # trusted input, but this image may lack the track (or be another version)
                    self.send({"type": "scenario_error", "name": message["name"], "message": f"{exc!r}"[:2000]})
                    continue
                self.replicas[message["name"]] = replica
                self.scenarios[message["name"]] = message
                self.send({"type": "scenario_ok", "name": message["name"], "hash": content_hash})
                if new_module and self.spare is not None:
                    self._replace_spare()
            elif kind == "episode":
                self.run_episode(message)
            elif kind == "ping":
                self.send({"type": "pong"})
            elif kind == "kill":
                pass  # for an episode that has already ended
            elif kind == "shutdown":
                return
            else:
                raise protocol.ProtocolError(f"unexpected {kind!r} frame on the control connection")

    def _control_between_episodes(self) -> None:
        try:
            message = protocol.recv(self.ctl, max_size=protocol.MAX_FRAME_TO_SANDBOX)
        except protocol.ChannelClosed:
            raise SystemExit(0) from None
        if message["type"] == "ping":
            self.send({"type": "pong"})
        elif message["type"] == "shutdown":
            raise SystemExit(0)

    def run_episode(self, message: dict[str, Any]) -> None:
        spare, self.spare = self.spare or self._fork_spare(), None
        name = message["scenario"]
        assignment: dict[str, Any] = {
            "type": "episode",
            "episode_id": message["episode_id"],
            "scenario": name,
            "token": message["token"],
        }
        if name not in spare.replicas:  # forked before this scenario arrived: it builds its replica from the frame
            assignment["scenario_frame"] = self.scenarios[name]
        status, killed, shutdown = self._supervise(spare, protocol.encode(assignment, max_size=1 << 30))
        clean = self._end_and_clean(spare)
        if shutdown:
            raise SystemExit(0)  # nobody is listening any more
        self.send_with_output(
            {
                "type": "exited",
                "episode_id": message["episode_id"],
                **_wait_status(status),
                "killed": killed,
                "scratch_dirty": not clean or self.dirty,
            }
        )
        if clean and not self.dirty:  # unclean: the worker replaces this sandbox, so no episode follows here
            self.spare = self._fork_spare()

    def _supervise(self, spare: _Spare, assignment: bytes) -> tuple[int, bool, bool]:
        """Hand over the assignment, then read output and control frames until the episode process ends.
        Returns (wait status, killed, shutdown)."""
        ctl_fd = self.ctl.fileno()
        os.set_blocking(spare.go, False)  # a scenario frame may not fit the pipe: written as the process reads
        pending = memoryview(assignment)
        killed = shutdown = False
        while True:
            writing = [spare.go] if spare.go >= 0 else []
            readable, writable, _ = select.select([ctl_fd, spare.pidfd, *spare.outputs], writing, [])
            if writable:
                try:
                    pending = pending[os.write(spare.go, pending) :]
                except BrokenPipeError:  # it died before reading it all: its pidfd says how
                    pending = pending[:0]
                if not pending:
                    spare.close_go()
            spare.read_output(readable)
            if ctl_fd in readable:
                try:
                    message = protocol.recv(self.ctl, max_size=protocol.MAX_FRAME_TO_SANDBOX)
                except protocol.ChannelClosed:
                    message = {"type": "shutdown"}
                if message["type"] == "ping":
                    self.send({"type": "pong"})
                elif message["type"] in ("kill", "shutdown"):
                    shutdown = shutdown or message["type"] == "shutdown"
                    killed = True
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(spare.pid, signal.SIGKILL)
            if spare.pidfd in readable:
                status = spare.reap()
                spare.close_go()
                spare.drain()
                return status, killed, shutdown

    # ------------------------------------------------------------------ episode processes

    # An episode's process is forked ahead of its episode (a "spare"), right after the previous episode's cleanup,
    # and imports the policy while the worker does its own work between episodes. Then it waits for its
    # assignment on a pipe. It is forked from this process, in which no code of the participant ever ran.

    def _fork_spare(self, report: tuple[int, int] | None = None) -> _Spare:
        """Fork an episode process; ``report``: a pipe (read end, write end) on which it reports its import."""
        replicas, bundle = self.replicas, self.bundle
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        go_r, go_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        # Objects the parent owns stay out of the child's garbage collections: otherwise the child's first
        # collection writes to every one of them and copies most of the parent's memory, page by page.
        gc.freeze()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the episode process, until its episode comes
            code = EXIT_HARNESS
            try:
                die_with_parent(parent)
                signal.signal(signal.SIGINT, signal.default_int_handler)  # as in any Python process
                os.setpgid(0, 0)
                self.ctl.close()
                os.dup2(out_w, 1)
                os.dup2(err_w, 2)
                bind_stdio()
                for fd in (out_r, out_w, err_r, err_w, go_w, *(report[:1] if report else ())):
                    os.close(fd)
                imported = import_policy(bundle)
                if report is not None:
                    with contextlib.suppress(OSError):
                        _write_all(report[1], protocol.encode(import_report(imported)))
                    os.close(report[1])
                code = _serve_assignment(self.socket_path, imported, replicas, read_assignment(go_r), self.poll_seconds)
            finally:
                with contextlib.suppress(BaseException):
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(code)
        for fd in (out_w, err_w, go_r):
            os.close(fd)
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)  # also here, so the group exists before either side runs on
        outputs = {out_r: self.stdout, err_r: self.stderr}
        return _Spare(pid, os.pidfd_open(pid), go_w, outputs, frozenset(replicas))

    def _end(self, spare: _Spare) -> int:
        """Kill what is left of an episode (in a container: every process but this one, PID 1) and close its
        pipes; the episode process's wait status if it was still to be reaped, else 0."""
        status = 0
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(spare.pid, signal.SIGKILL)
        if spare.pidfd >= 0:
            status = spare.reap()
        if self.container:
            # Processes that left the episode's group (setsid) survive the group kill and would live on into the
            # next episodes. In a PID namespace of its own every other process is the policy's: kill(-1) reaches
            # exactly those. As their PID 1 this process also inherits (and here reaps) every orphan.
            deadline = time.monotonic() + REAP_SECONDS
            while True:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(-1, signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):
                    while os.waitpid(-1, os.WNOHANG)[0] > 0:
                        pass
                if not others_alive() or time.monotonic() > deadline:
                    break
                time.sleep(0.001)
        spare.close_go()
        spare.drain(0.0)
        return status

    def _end_and_clean(self, spare: _Spare) -> bool:
        """``_end`` then ``_clean_up``; False (unclean: the worker replaces the sandbox) if either fails. Whatever the
        policy did to this process's resources (limits it could not lower, descriptors), the harness reports the
        episode's end instead of dying: a sandbox that dies under an episode is one the worker replays."""
        try:
            self._end(spare)
            return self._clean_up()
        except Exception:
            return False

    def _clean_up(self) -> bool:
        """After an episode's processes are gone: empty the scratch space (in a container). False: something could
        not be removed, or a process survived; the worker then replaces the sandbox."""
        if not self.container:
            return True  # the process backend's /tmp is the host's; its episodes are not isolated this way
        if others_alive():
            return False
        return empty_scratch(SCRATCH_DIRS)

    def _replace_spare(self) -> None:
        """The waiting spare was forked before a track's module was first imported here: it would import it
        itself, after its policy, with the policy's bundle first on its path. It goes (cleaned up after as after an
        episode: its import may have left files and processes) and a new one inherits the module and the replica;
        once per session and track outside the built-in ones."""
        assert self.spare is not None
        spare, self.spare = self.spare, None
        clean = self._end_and_clean(spare)
        self.stdout.reset()
        self.stderr.reset()
        if clean:
            self.spare = self._fork_spare()
        else:
            self.dirty = True  # the next episode's report says so, and the worker replaces this sandbox after it

    def _discard(self, spare: _Spare) -> None:
        """End an unused spare (the harness is leaving)."""
        self._end(spare)
        self.stdout.reset()
        self.stderr.reset()


def _serve_assignment(
    socket_path: str,
    imported: Imported,
    replicas: dict[str, Replica],
    assignment: dict[str, Any] | None,
    poll_seconds: float,
) -> int:
    if assignment is None:  # discarded unused
        return EXIT_OK
    name = assignment["scenario"]
    replica = replicas.get(name)
    if replica is None:
        replica, _ = replica_from_frame(assignment["scenario_frame"])
    return serve_episode(socket_path, imported, replica, assignment["episode_id"], assignment["token"], poll_seconds)


def _parse_report(data: bytes) -> dict[str, Any] | None:
    """The import report (written by a process the policy ran in: anything may be there), or None."""
    try:
        report = protocol.decode(data[protocol.HEADER.size :])
        protocol.expect(
            report,
            "imported",
            {
                "ok": bool,
                "traceback": str,
                "out_of_memory": bool,
                "import_seconds": (int, float),
                "torch": (str, type(None)),
                "parameters": list,
            },
        )
    except (protocol.ProtocolError, KeyError):
        return None
    return report


def _wait_status(status: int) -> dict[str, int | None]:
    return {
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
    }


def main(argv: list[str] | None = None) -> int:
    trusted_import_path()
    make_undumpable()
    # Before anything is forked: every episode process inherits the filter, and cannot undo it.
    guarded = forbid_cache_control()
    # As the first process of a PID namespace (container, or unshare --pid), the kernel drops every signal the
    # namespace's other processes send it that it does not handle: ignoring SIGINT (Python handles it) leaves the
    # policy no signal at all that could end or stop the harness.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    nonce = os.environ.pop(NONCE_ENV, "")
    parser = argparse.ArgumentParser(prog="layersched.worker.sandbox.harness", description=__doc__.splitlines()[0])
    parser.add_argument("--socket", required=True, help="Unix socket of the trusted worker")
    parser.add_argument("--bundle", required=True, type=Path, help="directory holding policy.py")
    parser.add_argument("--output-bytes", type=int, default=1024 * 1024, help="captured bytes per stream")
    parser.add_argument(
        "--container",
        action="store_true",
        help="after each episode kill every other process but PID 1 and empty /tmp and /dev/shm; ONLY in a "
        "container (a PID namespace and scratch space of its own)",
    )
    parser.add_argument(
        "--poll-us", type=int, default=0, help="microseconds an episode process looks for its next task before sleeping"
    )
    parser.add_argument(
        "--await-load",
        action="store_true",
        help="warm pool: start before the bundle exists and import it only on a 'load' frame",
    )
    args = parser.parse_args(argv)
    if args.container and not guarded:
        # A sandbox without the filter would let a policy steer the page cache that every sandbox shares: the
        # service's problem (an unsupported platform), reported as the sandbox not starting.
        print(f"layersched harness: cannot install the seccomp filter on {platform.machine()}", file=sys.stderr)
        return EXIT_HARNESS
    harness = Harness(
        args.socket, args.bundle, args.output_bytes, container=args.container, poll_seconds=args.poll_us * 1e-6
    )
    harness.send({"type": "sim", "fingerprint": sim_fingerprint(), "nonce": nonce})
    # From here on the harness's own stdout/stderr are not read by anyone; episode output goes through pipes.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    if args.await_load and not harness.await_load():
        return 0
    if not harness.start():
        return 0
    harness.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
