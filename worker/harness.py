"""The sandbox side: import the student's policy once, then answer one decision at a time, one process per episode.

Runs *inside* the sandbox with the standard library, numpy, ``layersched.sim`` and (if the policy imports it)
torch, as ``python3 -m layersched.worker.harness --socket PATH --bundle DIR``.

* The parent process connects the control connection, reports its simulator's fingerprint (``sim``, before any
  code of the participant runs), imports ``policy.py`` from the bundle (seeded with 0, so import-time randomness
  is reproducible) and reports ``ready`` or ``import_error`` with the traceback.
* For each episode it forks. The child seeds Python's, numpy's and torch's global generators from the seed the
  trusted side sent, opens its own episode connection, and keeps a *replica* ``ClusterEnv``: it knows the scenario
  (node parameters, catalog), the tasks seen so far and the current one; never future tasks, the workload seed or
  its key. The policy may do anything to its replica; the score is computed on the trusted side.
* The parent captures the child's stdout/stderr (bounded, the rest counted), kills it on request (timeouts are the
  trusted side's decision) and reports how it ended in an ``exited`` frame. When an episode ends normally the
  child first reports where its time went (``timing``: the policy's calls, the replica, the channel), for
  benchmarks only.
* ``--await-load`` (warm pool, ``layersched.worker.sandbox_pool``): the container starts before its bundle exists;
  after ``sim`` the harness waits, answering pings, until the worker has copied the bundle in and sends ``load``.

Everything the harness says is untrusted: the policy runs in the same processes. The trusted side only relies on
it for convenience (output capture, OOM hints) and validates every action itself.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import ctypes
import gc
import hashlib
import importlib.util
import operator
import os
import platform
import random
import select
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from layersched.sim.catalog import parse_catalog
from layersched.sim.env import ClusterEnv
from layersched.sim.scenario import CloudNode, NodeRanges, Scenario
from layersched.sim.workload import NodeSpec, Task
from layersched.worker import protocol

Policy = Callable[[Any, Task, random.Random], Any]

# Exit codes of an episode process (besides being killed by a signal).
# The container's writable places (tmpfs). Episodes must not hand state to each other through them.
SCRATCH_DIRS = ("/tmp", "/dev/shm")

EXIT_OK = 0
EXIT_POLICY_RAISED = 1
EXIT_PROTOCOL = 3
EXIT_HARNESS = 70

_INT64 = 2**63


# ---------------------------------------------------------------------------------------------- wire conversions
# Used by both sides: the trusted runner encodes, the harness decodes.


def scenario_to_wire(name: str, scenario: Scenario) -> dict[str, Any]:
    params = scenario.params()
    params.pop("catalog")
    return {
        "type": "scenario",
        "name": name,
        "hash": scenario.content_hash,
        "params": params,
        "catalog": {"name": scenario.catalog.name, "images": scenario.catalog.to_json()},
    }


def scenario_from_wire(message: dict[str, Any]) -> Scenario:
    p = message["params"]
    cloud = p["cloud"]
    return Scenario(
        catalog=parse_catalog(message["catalog"]["images"], name=message["catalog"]["name"]),
        n_nodes=p["n_nodes"],
        n_tasks=p["n_tasks"],
        arrival_rate=p["arrival_rate"],
        slots=p["slots"],
        nodes=NodeRanges(
            bandwidth_mbps=tuple(p["nodes"]["bandwidth_mbps"]),
            freq_ghz=tuple(p["nodes"]["freq_ghz"]),
            storage_gb=tuple(p["nodes"]["storage_gb"]),
        ),
        cycles_g=tuple(p["cycles_g"]),
        zipf_s=p["zipf_s"],
        cloud=None if cloud is None else CloudNode(**cloud),
    )


def nodes_to_wire(specs: list[NodeSpec]) -> list[list[Any]]:
    # JSON has no Infinity: the cloud's unlimited storage travels as null.
    return [[s.bandwidth, s.freq, None if s.storage == float("inf") else s.storage, s.slots, s.is_cloud] for s in specs]


def nodes_from_wire(rows: list[list[Any]]) -> list[NodeSpec]:
    return [
        NodeSpec(bandwidth=b, freq=f, storage=float("inf") if s is None else s, slots=k, is_cloud=c)
        for b, f, s, k, c in rows
    ]


def task_to_wire(step: int, task: Task) -> dict[str, Any]:
    return {"type": "task", "step": step, "task": [task.arrival, task.image, task.cycles]}


def action_message(step: int, value: object) -> dict[str, Any]:
    """The reply for what the policy returned: an ``action`` if it is an integer, else ``bad_action`` naming it."""
    if not isinstance(value, bool) and not isinstance(value, int):
        with contextlib.suppress(Exception):  # numpy integers and other exact integer types, as in-process
            value = operator.index(value)  # type: ignore[arg-type]
    if isinstance(value, int) and not isinstance(value, bool):
        if -_INT64 <= value < _INT64:
            return {"type": "action", "step": step, "action": value}
        return {
            "type": "bad_action",
            "step": step,
            "value": f"an integer of {value.bit_length()} bits",
            "value_type": "int",
        }
    try:
        text = repr(value)[:200]
    except Exception:
        text = "<unrepresentable>"
    return {"type": "bad_action", "step": step, "value": text, "value_type": type(value).__name__}


def sim_fingerprint() -> str:
    """SHA-256 over the simulator as installed here: its ``*.py`` and ``*.c`` files and data files (what the image
    build copies; the image runs observe()'s Python loop, the host may run the C kernel built from that ``*.c``).

    The harness reports it *before* it imports the policy, so the trusted side gets it from code the participant has
    not touched yet: if it equals the worker's own, the two simulators are the same and a later disagreement about a
    scenario (``scenario_ok`` with another hash) can only be the policy tampering with the harness.
    """
    import layersched.sim

    root = Path(layersched.sim.__file__).parent
    files = sorted([*root.glob("*.py"), *root.glob("*.c"), *(p for p in (root / "data").glob("*") if p.is_file())])
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------------- output capture


class Capture:
    """Keeps the first ``limit`` bytes of a stream and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = max(0, self.limit - len(self.data))
        self.data += chunk[:room]
        self.dropped += max(0, len(chunk) - room)

    def b64(self) -> str:
        return base64.b64encode(bytes(self.data)).decode()


def _pump(captures: dict[int, Capture], stop: threading.Event, linger: float = 0.2) -> None:
    """Read pipes into their captures until they close; once ``stop`` is set, for at most ``linger`` s more (a
    process the import left behind may keep a pipe open). Closes the read ends."""
    open_fds = set(captures)
    until: float | None = None
    while open_fds:
        if until is None and stop.is_set():
            until = time.monotonic() + linger
        if until is not None and time.monotonic() >= until:
            break
        readable, _, _ = select.select(list(open_fds), [], [], 0.05)
        for fd in readable:
            _read_into(fd, captures[fd], open_fds)
    for fd in open_fds:
        os.close(fd)


# ---------------------------------------------------------------------------------------------- seeding


def seed_globals(seed: int) -> None:
    """Seed Python's, numpy's and (if imported) torch's global generators from one 63-bit seed."""
    random.seed(seed)
    np.random.seed([seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF])  # legacy seeding takes 32-bit words
    torch = sys.modules.get("torch")
    if torch is not None:
        # The CPU generator only: the sandbox has no accelerator. torch.manual_seed would also queue lazy seeds
        # for CUDA, MPS, XPU and MTIA, each recording a formatted stack: 0.2 ms in a warm process, 3-7 ms in a
        # freshly forked episode process, of which the CPU generator's seeding is 2 us.
        torch.default_generator.manual_seed(seed)


def configure_torch() -> None:
    """Single-threaded, deterministic torch, if the policy imported it."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    torch.set_num_threads(1)
    with contextlib.suppress(RuntimeError):  # fails once inter-op work has started; OMP_NUM_THREADS still holds
        torch.set_num_interop_threads(1)
    torch.use_deterministic_algorithms(True)


def oom_kills() -> int | None:
    """The container's OOM-kill counter (cgroup v1 or v2), or None outside a memory cgroup."""
    for path, key in (
        ("/sys/fs/cgroup/memory.events", "oom_kill"),
        ("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill"),
    ):
        try:
            with open(path) as f:
                for line in f:
                    name, _, value = line.partition(" ")
                    if name == key:
                        return int(value)
        except (OSError, ValueError):
            continue
    return None


# ---------------------------------------------------------------------------------------------- parent


def load_policy(bundle: Path) -> Policy:
    """Import ``policy.py`` from ``bundle`` (its directory first on ``sys.path``) and return its ``policy``."""
    path = bundle / "policy.py"
    if not path.is_file():
        raise ImportError(f"bundle has no policy.py (looked for {path})")
    sys.path.insert(0, str(bundle))
    spec = importlib.util.spec_from_file_location("policy", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["policy"] = module
    spec.loader.exec_module(module)
    fn = getattr(module, "policy", None)
    if not callable(fn):
        raise ImportError(f"policy.py defines no callable 'policy' (found {type(fn).__name__})")
    return fn  # type: ignore[no-any-return]


@dataclass(frozen=True)
class _Spare:
    """An episode process forked ahead of its episode, waiting for the episode's message on the pipe ``go``."""

    pid: int
    go: int  # write end: the episode message, then EOF
    out_r: int  # read ends of its stdout and stderr
    err_r: int
    scenarios_seen: int  # Harness.scenarios_changed when it was forked


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_go(fd: int) -> dict[str, Any] | None:
    """The episode message the parent writes on the spare's pipe (one frame, then EOF); None on EOF alone."""
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    os.close(fd)
    data = b"".join(chunks)
    if not data:
        return None
    return protocol.decode(data[protocol.HEADER.size :])


class Harness:
    def __init__(
        self, socket_path: str, bundle: Path, output_bytes: int, *, reap_all: bool = False, poll_seconds: float = 0.0
    ) -> None:
        self.socket_path = socket_path
        self.poll_seconds = poll_seconds
        self.bundle = bundle
        self.output_bytes = output_bytes
        self.reap_all = reap_all
        self.envs: dict[str, ClusterEnv] = {}
        self.policy: Policy | None = None
        # What the scratch directories held right after the import: every episode must start from exactly that.
        self.scratch: dict[str, tuple[int, int, int, int]] = {}
        self.spare: _Spare | None = None
        self.scenarios_changed = 0  # counts scenario frames, so that a spare knows which ones it has
        self.ctl = self._connect()

    def _connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(self.socket_path)
        return sock

    def send(self, message: dict[str, Any]) -> None:
        protocol.send(self.ctl, message, max_size=protocol.MAX_FRAME_FROM_SANDBOX)

    def import_policy(self) -> bool:
        """Import with stdout/stderr going to pipes read while it runs, so the import's output is reported too,
        bounded as an episode's is. (Not to files in /tmp: the policy can fill /tmp, and its import would then fail
        on its first print.)"""
        started = time.monotonic()
        (out_r, out_w), (err_r, err_w) = os.pipe(), os.pipe()
        captures = [Capture(self.output_bytes), Capture(self.output_bytes)]
        stop = threading.Event()
        reader = threading.Thread(target=_pump, args=({out_r: captures[0], err_r: captures[1]}, stop), daemon=True)
        reader.start()
        try:
            error = self._import_into(out_w, err_w)
        finally:
            os.close(out_w)
            os.close(err_w)
            stop.set()
            reader.join()
        report = {
            "stdout": captures[0].b64(),
            "stderr": captures[1].b64(),
            "stdout_dropped": captures[0].dropped,
            "stderr_dropped": captures[1].dropped,
        }
        if error is not None:
            self.send({"type": "import_error", "traceback": error[-20000:], **report})
            return False
        if self.reap_all:  # in a container only: the process backend's /tmp is the host's
            self.scratch = scratch_snapshot(SCRATCH_DIRS)
        torch = sys.modules.get("torch")
        self.send(
            {
                "type": "ready",
                "python": platform.python_version(),
                "numpy": np.__version__,
                "torch": None if torch is None else str(torch.__version__),
                "import_seconds": time.monotonic() - started,
                **report,
            }
        )
        return True

    def _import_into(self, out: int, err: int) -> str | None:
        """Import the policy with fds 1 and 2 pointing at the fds ``out`` and ``err``; the traceback if it failed."""
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(out, 1)
        os.dup2(err, 2)
        error = None
        try:
            seed_globals(0)
            self.policy = load_policy(self.bundle)
            configure_torch()
        except BaseException:  # the sandbox boundary: SystemExit and KeyboardInterrupt from the module count too
            error = traceback.format_exc()
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        return error

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

    def serve(self) -> None:
        try:
            self._serve()
        finally:
            self._discard_spare()

    def _serve(self) -> None:
        while True:
            try:
                message = protocol.recv(self.ctl, max_size=protocol.MAX_FRAME_TO_SANDBOX)
            except protocol.ChannelClosed:
                return  # the worker is gone: so are we
            kind = message["type"]
            if kind == "scenario":
                scenario = scenario_from_wire(message)
                self.envs[message["name"]] = ClusterEnv(scenario)
                self.scenarios_changed += 1  # a spare forked before this has not got it
                self.send({"type": "scenario_ok", "name": message["name"], "hash": scenario.content_hash})
                self._discard_spare()
                self.spare = self._fork_spare()
            elif kind == "episode":
                self.run_episode(message)
            elif kind == "ping":
                self.send({"type": "pong"})
            elif kind == "shutdown":
                return
            else:
                raise protocol.ProtocolError(f"unexpected {kind!r} frame on the control connection")

    # The episode process is forked *ahead* of its episode (a "spare"), right after the previous episode's
    # cleanup or a new scenario, and waits for its episode's message on a pipe. The fork (milliseconds for a
    # process holding torch) then overlaps with the worker's own work between episodes instead of adding to
    # every episode. The spare is forked from the same state an episode-time fork would see: after the
    # import, after the previous episode's processes were killed and its scratch files removed; the parent
    # runs no code of the participant in between.

    def _fork_spare(self) -> _Spare:
        assert self.policy is not None
        policy, envs = self.policy, self.envs
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
                _die_with_parent(parent)
                os.setpgid(0, 0)
                self.ctl.close()
                os.dup2(out_w, 1)
                os.dup2(err_w, 2)
                for fd in (out_r, out_w, err_r, err_w, go_w):
                    os.close(fd)
                message = _read_go(go_r)
                if message is not None:  # None: discarded unused
                    env = envs[message["scenario"]]
                    code = episode_process(self.socket_path, policy, env, message, self.poll_seconds)
                else:
                    code = EXIT_OK
            finally:
                with contextlib.suppress(BaseException):
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(code)
        for fd in (out_w, err_w, go_r):
            os.close(fd)
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)  # also here, so the group exists before either side runs on
        return _Spare(pid, go_w, out_r, err_r, self.scenarios_changed)

    def _discard_spare(self) -> None:
        """End an unused spare (its scenarios are out of date, or the harness is leaving)."""
        spare, self.spare = self.spare, None
        if spare is None:
            return
        os.close(spare.go)  # EOF without a message: it exits by itself; the kill is for certainty
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(spare.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(spare.pid, 0)
        for fd in (spare.out_r, spare.err_r):
            os.close(fd)

    def _start_episode_process(self, message: dict[str, Any]) -> _Spare:
        """Hand ``message`` to the spare (forking one now if there is none, or it predates a scenario)."""
        if self.spare is not None and self.spare.scenarios_seen != self.scenarios_changed:
            self._discard_spare()
        payload = protocol.encode(message)
        for _ in range(2):
            spare, self.spare = self.spare or self._fork_spare(), None
            try:
                _write_all(spare.go, payload)
            except BrokenPipeError:  # it died waiting (killed from outside): fork another
                self.spare = spare
                self._discard_spare()
                continue
            os.close(spare.go)
            return spare
        raise RuntimeError("two episode processes in a row died before their episode began")

    def run_episode(self, message: dict[str, Any]) -> None:
        assert self.policy is not None
        oom_before = oom_kills()
        process = self._start_episode_process(message)
        pid, out_r, err_r = process.pid, process.out_r, process.err_r
        captures = {out_r: Capture(self.output_bytes), err_r: Capture(self.output_bytes)}
        open_fds = {out_r, err_r}
        status, killed, shutdown = self._supervise(pid, captures, open_fds)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # whatever the episode left behind
        if self.reap_all:
            # Processes that left the episode's group (setsid) survive the group kill and would live on into the
            # next episodes (holding pids, CPU, the channel). With a PID namespace of our own, every process but
            # init and this one is the policy's: kill(-1) reaches exactly those.
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)
        self._drain(captures, open_fds)
        # Files an episode created are removed; if it changed what the import left, only a new sandbox (a fresh
        # import) restores it: the runner replaces this one before the next episode. The same for memory that
        # every episode process inherits shared (not copied on write) from this one: a channel between episodes.
        scratch_dirty = (self.reap_all and restore_scratch(SCRATCH_DIRS, self.scratch)) or holds_shared_memory()
        oom_after = oom_kills()
        out, err = captures[out_r], captures[err_r]
        if shutdown:
            raise SystemExit(0)  # nobody is listening any more
        self.send(
            {
                "type": "exited",
                "episode_id": message["episode_id"],
                "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                "killed": killed,
                "oom_kills": None if oom_before is None or oom_after is None else oom_after - oom_before,
                "stdout": out.b64(),
                "stderr": err.b64(),
                "stdout_dropped": out.dropped,
                "stderr_dropped": err.dropped,
                "scratch_dirty": scratch_dirty,
            }
        )
        if not scratch_dirty:  # dirty: the worker replaces this sandbox, so no episode follows here
            self.spare = self._fork_spare()

    def _supervise(self, pid: int, captures: dict[int, Capture], open_fds: set[int]) -> tuple[int, bool, bool]:
        """Read output and control frames until the episode process ends. Returns (wait status, killed, shutdown)."""
        pidfd = os.pidfd_open(pid)
        ctl_fd = self.ctl.fileno()
        killed = shutdown = False
        try:
            while True:
                readable, _, _ = select.select([ctl_fd, pidfd, *open_fds], [], [])
                for fd in readable:
                    if fd in open_fds:
                        _read_into(fd, captures[fd], open_fds)
                if ctl_fd in readable:
                    try:
                        message = protocol.recv(self.ctl, max_size=protocol.MAX_FRAME_TO_SANDBOX)
                    except protocol.ChannelClosed:
                        message = {"type": "shutdown"}
                    if message["type"] == "ping":
                        self.send({"type": "pong"})
                    elif message["type"] in ("kill", "shutdown"):
                        shutdown = message["type"] == "shutdown"
                        killed = True
                        with contextlib.suppress(ProcessLookupError, PermissionError):
                            os.killpg(pid, signal.SIGKILL)
                if pidfd in readable:
                    _, status = os.waitpid(pid, 0)
                    return status, killed, shutdown
        finally:
            os.close(pidfd)

    def _drain(self, captures: dict[int, Capture], open_fds: set[int], seconds: float = 0.2) -> None:
        """Read what is left in the pipes; stop early if an escaped grandchild keeps one open."""
        deadline = time.monotonic() + seconds
        while open_fds and (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select(list(open_fds), [], [], left)
            for fd in readable:
                _read_into(fd, captures[fd], open_fds)
        for fd in list(open_fds):
            os.close(fd)
            open_fds.discard(fd)


def _read_into(fd: int, capture: Capture, open_fds: set[int]) -> None:
    chunk = os.read(fd, 1 << 16)
    if chunk:
        capture.add(chunk)
    else:
        os.close(fd)
        open_fds.discard(fd)


# ---------------------------------------------------------------------------------------------- episode process


def _die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when the harness dies (``PR_SET_PDEATHSIG``), so that an episode never
    outlives the harness that reports on it, also where there is no PID namespace to tear everything down."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the harness died before the request took effect
        os._exit(EXIT_HARNESS)


def episode_process(
    socket_path: str, policy: Policy, env: ClusterEnv, message: dict[str, Any], poll_seconds: float = 0.0
) -> int:
    """Serve one episode's decisions on a fresh connection. Returns the process exit code. ``poll_seconds``: how
    long to look for each next task before sleeping (``SandboxLimits.poll_seconds``)."""
    seed = message["seed"]
    seed_globals(seed)
    rng = random.Random(seed)
    env.start(nodes_from_wire(message["nodes"]))
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(socket_path)

    def send(reply: dict[str, Any]) -> None:
        protocol.send(conn, reply, max_size=protocol.MAX_FRAME_FROM_SANDBOX)

    send({"type": "hello", "episode_id": message["episode_id"]})
    reader = protocol.FrameReader(conn, max_size=protocol.MAX_FRAME_TO_SANDBOX)
    step = 0
    # Where this process's time goes (perf_counter sums), reported at the end for benchmarks: the policy's own
    # compute here can then be compared with the same policy's in-process compute.
    clock = time.perf_counter
    policy_s = replica_s = wait_s = send_s = 0.0
    replica_broken: str | None = None  # the traceback, reported with the next task (its nonce) or at the end
    while True:
        t0 = clock()
        frame = reader.recv(poll_seconds=poll_seconds)
        t1 = clock()
        wait_s += t1 - t0
        if replica_broken is not None:
            send(
                {
                    "type": "error",
                    "step": step,
                    "nonce": frame.get("nonce", 0),
                    "kind": "replica",
                    "traceback": replica_broken,
                }
            )
            return EXIT_POLICY_RAISED
        if frame["type"] == "end":
            with contextlib.suppress(OSError):  # the trusted side may have stopped listening (an aborted episode)
                send(
                    {
                        "type": "timing",
                        "decisions": step,
                        "policy_seconds": policy_s,
                        "replica_seconds": replica_s,
                        "wait_seconds": wait_s,
                        "send_seconds": send_s,
                    }
                )
            return EXIT_OK
        if frame["type"] != "task" or frame.get("step") != step:
            return EXIT_PROTOCOL
        nonce = frame["nonce"]  # echoed in the reply: proof that it answers this task, written after it arrived
        arrival, image, cycles = frame["task"]
        task = Task(float(arrival), int(image), float(cycles))
        env.tasks.append(task)
        env.k = step
        try:
            t0 = clock()
            value = policy(env, task, rng)
            policy_s += clock() - t0
            reply = action_message(step, value)
        except MemoryError:
            tb = traceback.format_exc()[-20000:]
            send({"type": "error", "step": step, "nonce": nonce, "kind": "memory", "traceback": tb})
            return EXIT_POLICY_RAISED
        except BaseException:  # the sandbox boundary: report whatever the policy raised, SystemExit included
            tb = traceback.format_exc()[-20000:]
            send({"type": "error", "step": step, "nonce": nonce, "kind": "exception", "traceback": tb})
            return EXIT_POLICY_RAISED
        t0 = clock()
        if reply["type"] == "action":
            conn.sendall(protocol.encode_action(step, reply["action"], nonce))
        else:
            send({**reply, "nonce": nonce})
        t1 = clock()
        send_s += t1 - t0
        if reply["type"] == "action" and 0 <= reply["action"] < env.n_nodes:
            # After replying, so the replica's update overlaps with the trusted side's own step.
            t0 = t1
            try:
                ClusterEnv.place(env, task, reply["action"])
            except BaseException:  # the policy broke its replica; it finds out at the next step
                replica_broken = traceback.format_exc()[-20000:]
            env.k = step + 1
            replica_s += clock() - t0
        step += 1


# ---------------------------------------------------------------------------------------------- entry point


def holds_shared_memory() -> bool:
    """Whether this process maps writable shared memory (``mmap.mmap(-1, n)``, ``multiprocessing`` values): unlike
    the rest of its memory, forked episode processes would all write to the same pages. numpy and torch map none."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=2)
            if len(fields) > 1 and fields[1][1] == "w" and fields[1][3] == "s":
                return True
    return False


def scratch_snapshot(roots: tuple[str, ...]) -> dict[str, tuple[int, int, int, int]]:
    """(inode, size, mtime, mode) of every entry under ``roots``, symlinks not followed."""
    entries: dict[str, tuple[int, int, int, int]] = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            for name in dirs + files:
                path = os.path.join(folder, name)
                with contextlib.suppress(OSError):
                    st = os.lstat(path)
                    entries[path] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)
    return entries


def restore_scratch(roots: tuple[str, ...], baseline: dict[str, tuple[int, int, int, int]]) -> bool:
    """Delete what is new under ``roots`` since ``baseline``; True if a baseline entry was changed or removed."""
    now = scratch_snapshot(roots)
    for path in sorted((p for p in now if p not in baseline), key=len, reverse=True):  # children first
        with contextlib.suppress(OSError):
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)
            else:
                os.unlink(path)
    return any(now.get(path) != entry for path, entry in baseline.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="layersched.worker.harness", description=__doc__.splitlines()[0])
    parser.add_argument("--socket", required=True, help="Unix socket of the trusted worker")
    parser.add_argument("--bundle", required=True, type=Path, help="directory holding policy.py")
    parser.add_argument("--output-bytes", type=int, default=1024 * 1024, help="captured bytes per stream")
    parser.add_argument(
        "--reap-all",
        action="store_true",
        help="after each episode kill every other process but PID 1; ONLY in a PID namespace of its own (container)",
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
    harness = Harness(
        args.socket, args.bundle, args.output_bytes, reap_all=args.reap_all, poll_seconds=args.poll_us * 1e-6
    )
    # Before the policy's code runs: what this frame says cannot have been tampered with.
    harness.send({"type": "sim", "fingerprint": sim_fingerprint()})
    # From here on the harness's own stdout/stderr are not read by anyone; episode output goes through pipes.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    if args.await_load and not harness.await_load():
        return 0
    if not harness.import_policy():
        return 0
    harness.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
