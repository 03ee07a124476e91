"""The episode process: a fresh import of the participant's policy that serves exactly one episode.

The harness (``layersched.worker.sandbox.harness``) forks it ahead of its episode; here it

1. imports ``policy.py`` from the bundle with every global generator seeded with 0 (import-time randomness is
   reproducible), torch single-threaded and deterministic;
2. waits on a pipe for the harness to say which episode it serves (EOF: it was not needed);
3. opens its own connection to the trusted side: ``<- hello``, ``-> start`` (the policy's seed and the episode's
   nodes), then per step ``-> task`` and ``<- action`` (``bad_action`` / ``error`` when the policy returned
   something else or raised), until ``-> end``.

The policy may do anything here: this process and everything it starts are killed when the episode ends, and the next
episode gets another fresh import. It keeps its track's *replica* of the episode (``Replica``: for the lab track a
``ClusterEnv`` with the scenario's node parameters and catalog, the tasks seen so far and the current one; never a
future task, the workload seed or its key). The policy gets the replica's view, which it may change as it likes: every
decision starts from the true state again (``layersched.sim.tracks.layers_v1.view``), and scores are computed on the
trusted side.
"""

from __future__ import annotations

import contextlib
import ctypes
import dis
import importlib.util
import io
import os
import random
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from layersched.sim.tracks import Replica
from layersched.sim.tracks.signature import parameter_names
from layersched.worker.sandbox import protocol
from layersched.worker.sandbox.wire import action_message

Policy = Callable[..., Any]

# Exit codes (besides being killed by a signal).
EXIT_OK = 0
EXIT_POLICY_RAISED = 1
EXIT_PROTOCOL = 3
EXIT_HARNESS = 70
# Tracebacks are cut to their last this many characters here (the trusted side cuts them again).
MAX_TRACEBACK_CHARS = 20000
_PR_SET_DUMPABLE = 4


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
    """Single-threaded, deterministic torch, if it is imported."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    torch.set_num_threads(1)
    with contextlib.suppress(RuntimeError):  # fails once inter-op work has started; OMP_NUM_THREADS still holds
        torch.set_num_interop_threads(1)
    torch.use_deterministic_algorithms(True)


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


def refused_allocation(exc: BaseException) -> bool:
    """Whether ``exc`` is a MemoryError of an allocation refused (raised in native code: the interpreter's, numpy's),
    not one the policy raised itself with a ``raise`` statement, which is its exception like any other (review of
    issue 30, item 10). Told by the instruction its innermost traceback frame was running: a ``raise`` or, for an
    allocation, a call or an operator. A bare ``raise`` of a refused allocation keeps its first frame: refused.
    Which limit refused it, the trusted side decides by the sandbox's memory accounting."""
    if not isinstance(exc, MemoryError):
        return False
    tb = exc.__traceback__
    if tb is None:
        return True
    while tb.tb_next is not None:
        tb = tb.tb_next
    for instruction in dis.get_instructions(tb.tb_frame.f_code):
        if instruction.offset == tb.tb_lasti:
            return instruction.opname not in ("RAISE_VARARGS", "RERAISE")
    return True  # the frame's instruction not found: as before, the allocation's


@dataclass(frozen=True)
class Imported:
    """How the import went: the policy, or the traceback of its failure (and whether it was an allocation refused,
    ``refused_allocation``); and how long it took."""

    policy: Policy | None
    traceback: str
    seconds: float
    out_of_memory: bool = False


def import_policy(bundle: Path) -> Imported:
    started = time.monotonic()
    try:
        seed_globals(0)
        policy = load_policy(bundle)
        configure_torch()
    except BaseException as exc:  # the sandbox boundary: SystemExit and KeyboardInterrupt from the module count too
        tb = traceback.format_exc()[-MAX_TRACEBACK_CHARS:]
        return Imported(None, tb, time.monotonic() - started, refused_allocation(exc))
    return Imported(policy, "", time.monotonic() - started)


def import_report(imported: Imported) -> dict[str, Any]:
    """What the first episode process tells the harness about its import (the harness relays it as ``ready``)."""
    torch = sys.modules.get("torch")
    return {
        "type": "imported",
        "ok": imported.policy is not None,
        "traceback": imported.traceback,
        "out_of_memory": imported.out_of_memory,
        "import_seconds": imported.seconds,
        "torch": None if torch is None else str(torch.__version__),
        # The policy's own parameter names, so that a refused reply is worded in them (as ``validate`` words it).
        "parameters": [] if imported.policy is None else list(parameter_names(imported.policy)),
    }


def die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when the harness dies (``PR_SET_PDEATHSIG``), so that an episode never
    outlives the harness that reports on it, also where there is no PID namespace to tear everything down."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the harness died before the request took effect
        os._exit(EXIT_HARNESS)
    # If memory runs out, this process goes first, not the harness. Forked from a non-dumpable harness, its /proc
    # files belong to root until it is dumpable again: for this one write, while no other process of the policy
    # exists (the last episode's are gone; this one has not imported anything yet).
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_DUMPABLE, 1)
    try:
        with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as handle:
            handle.write("1000")
    finally:
        libc.prctl(_PR_SET_DUMPABLE, 0)


def bind_stdio() -> None:
    """Have ``print`` write to file descriptors 1 and 2 (the episode's pipes), whatever the harness's own
    ``sys.stdout`` and ``sys.stderr`` were (in the sandbox they already are; under a test runner they are not)."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        try:
            bound = getattr(sys, name).fileno() == fd
        except (AttributeError, OSError, ValueError):
            bound = False
        if not bound:
            raw = io.FileIO(fd, "w", closefd=False)
            setattr(sys, name, io.TextIOWrapper(raw, encoding="utf-8", errors="backslashreplace", write_through=True))


def read_assignment(fd: int) -> dict[str, Any] | None:
    """The harness's one frame on the pipe ``fd`` (which episode to serve), then EOF; None on EOF alone."""
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    os.close(fd)
    data = b"".join(chunks)
    if not data:
        return None
    return protocol.decode(data[protocol.HEADER.size :])


def serve_episode(
    socket_path: str, imported: Imported, replica: Replica, episode_id: str, token: str, poll_seconds: float = 0.0
) -> int:
    """Serve one episode's decisions on a fresh connection, greeting with the episode's id and ``token`` (which the
    trusted side sent for this episode only). Returns the process exit code. ``poll_seconds``: how long to look for
    each next task before sleeping (``SandboxLimits.poll_seconds``)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(socket_path)

    def send(reply: dict[str, Any]) -> None:
        protocol.send(conn, reply, max_size=protocol.MAX_FRAME_FROM_SANDBOX)

    send({"type": "hello", "episode_id": episode_id, "token": token})
    reader = protocol.FrameReader(conn, max_size=protocol.MAX_FRAME_TO_SANDBOX, tasks=True)
    start = reader.recv()
    if start["type"] != "start":
        return EXIT_PROTOCOL
    seed = start["seed"]
    seed_globals(seed)
    rng = random.Random(seed)
    replica.start(start["episode"])
    policy = imported.policy
    step = 0
    # Where this process's time goes (perf_counter sums), reported at the end for benchmarks: the policy's own
    # compute here can then be compared with the same policy's in-process compute.
    clock = time.perf_counter
    policy_s = replica_s = wait_s = send_s = 0.0
    # A traceback to report with the next task (its nonce): of the import, or of the replica the policy broke.
    # (An import whose allocation was refused is reported as one of a decision is.)
    failed: tuple[str, str] | None = None
    if policy is None:
        failed = ("memory" if imported.out_of_memory else "import", imported.traceback)
    while True:
        t0 = clock()
        frame = reader.recv(poll_seconds=poll_seconds)
        t1 = clock()
        wait_s += t1 - t0
        if failed is not None and frame["type"] == "task":
            kind, tb = failed
            send({"type": "error", "step": step, "nonce": frame.get("nonce", 0), "kind": kind, "traceback": tb})
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
        if frame["type"] != "task" or frame.get("step") != step or policy is None:
            return EXIT_PROTOCOL
        nonce = frame["nonce"]  # echoed in the reply: proof that it answers this task, written after it arrived
        try:
            t0 = clock()
            value = replica.decide(policy, frame["task"], step, rng)
            policy_s += clock() - t0
            reply = action_message(step, value)
        except BaseException as exc:  # the sandbox boundary: report whatever the policy raised, SystemExit included
            tb = traceback.format_exc()[-MAX_TRACEBACK_CHARS:]
            kind = "memory" if refused_allocation(exc) else "exception"
            send({"type": "error", "step": step, "nonce": nonce, "kind": kind, "traceback": tb})
            return EXIT_POLICY_RAISED
        t0 = clock()
        if reply["type"] == "action":
            conn.sendall(protocol.encode_action(step, reply["action"], nonce))
        else:
            send({**reply, "nonce": nonce})
        t1 = clock()
        send_s += t1 - t0
        if reply["type"] == "action" and replica.in_range(reply["action"]):
            # After replying, so the replica's update overlaps with the trusted side's own step.
            t0 = t1
            try:
                replica.accepted(reply["action"])
            except BaseException:  # the policy changed the simulator's classes; it finds out at the next step
                failed = ("replica", traceback.format_exc()[-MAX_TRACEBACK_CHARS:])
            replica_s += clock() - t0
        step += 1
