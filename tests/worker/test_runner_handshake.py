"""The trusted side's start handshake against a scripted harness: what it accepts is exactly what the real harness
sends (issue 15, findings 7 and 13). A backend here "starts" a thread that connects to the channel and writes the
frames a test gives it, so each rule is checked without a sandbox."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest

from layersched.worker.sandbox import protocol
from layersched.worker.sandbox.limits import SandboxLimits
from layersched.worker.sandbox.reports import MAX_TRACEBACK_CHARS
from layersched.worker.sandbox.run_dirs import SOCKET_NAME
from layersched.worker.sandbox.runner import SandboxSession

POLICY = Path(__file__).parent / "policies" / "greedy"
READY = {
    "type": "ready",
    "python": "3.11",
    "numpy": "2",
    "torch": None,
    "preloaded": [],
    "import_seconds": 0.1,
    "parameters": [],
}
NO_OUTPUT = {"stdout_bytes": 0, "stderr_bytes": 0, "stdout_dropped": 0, "stderr_dropped": 0}


class Scripted:
    """A backend whose harness is ``script(nonce)``: the frames to send after connecting."""

    name: Literal["process"] = "process"
    image_digest = "scripted"
    sandbox_uid = None

    def __init__(self, script: Callable[[str], list[bytes]]) -> None:
        self.script = script
        self.sock: socket.socket | None = None
        self.running, self.outside = True, False  # what alive() and killed_from_outside() say

    def start(self, channel_dir: Path, bundle_dir: Path, *, nonce: str) -> None:
        def harness() -> None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self.sock.connect(str(channel_dir / SOCKET_NAME))
                for chunk in self.script(nonce):
                    self.sock.sendall(chunk)
            except OSError:
                pass  # the session refused the start and closed the channel before the script was done

        threading.Thread(target=harness, daemon=True).start()

    def alive(self) -> bool:
        return self.running

    def memory_window_end(self, *, verdict: bool = True) -> None:
        return None

    def describe_exit(self) -> str:
        return "scripted"

    def killed_from_outside(self) -> bool:
        return self.outside

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()


def frame(message: dict[str, Any]) -> bytes:
    return protocol.encode(message)


def sim(nonce: str) -> bytes:
    return frame({"type": "sim", "fingerprint": "f" * 64, "nonce": nonce})


def start(script: Callable[[str], list[bytes]]) -> SandboxSession:
    limits = SandboxLimits(startup_seconds=5.0)
    return SandboxSession(POLICY, Scripted(script), limits, allow_process_for_hidden=False)  # type: ignore[arg-type]


def test_a_harness_that_echoes_the_nonce_is_ready() -> None:
    with start(lambda nonce: [sim(nonce), frame(READY)]) as session:
        assert session.startup.status is None
        assert session.startup.info == {
            "python": "3.11",
            "numpy": "2",
            "torch": None,
            "import_seconds": 0.1,
            "parameters": (),
        }


@pytest.mark.parametrize(
    ("names", "kept"),
    [
        (["obs", "tasks", "rng"], ("obs", "tasks", "rng")),
        (["obs", "x[0] or view", "rng"], ()),  # not an identifier: would put code of the policy's choice in messages
        (["a" * 65], ()),
        ([f"p{i}" for i in range(9)], ()),
        (["obs", 3], ()),
    ],
    ids=["identifiers", "code", "long", "many", "not-text"],
)
def test_the_policys_parameter_names_are_kept_only_when_they_are_a_few_short_identifiers(
    names: list[Any], kept: tuple[str, ...]
) -> None:
    """The names come from a process the policy ran in; they reach the student's own messages (issue 29)."""
    with start(lambda nonce: [sim(nonce), frame({**READY, "parameters": names})]) as session:
        assert session.startup.status is None
        assert session.policy_parameters == kept


def test_a_connection_without_the_start_nonce_is_not_the_harness() -> None:
    """Reviewed main: a thread left in the replaced sandbox connected first and its forged 'ready' was accepted."""
    with start(lambda nonce: [sim("0" * 32), frame(READY)]) as session:
        assert session.startup.status == "infrastructure_error"
        assert "did not carry its start nonce" in session.startup.message


@pytest.mark.parametrize(
    ("ready", "complaint"),
    [
        ({**READY, "torch": 2}, "'ready' frame field 'torch' must be str or NoneType, got 2"),
        ({k: v for k, v in READY.items() if k != "numpy"}, "'ready' frame has wrong fields (missing ['numpy']"),
        ({**READY, "extra": 1}, "'ready' frame has wrong fields (missing [], unexpected ['extra']"),
    ],
    ids=["wrong-type", "missing", "extra"],
)
def test_a_malformed_ready_frame_is_refused(ready: dict[str, Any], complaint: str) -> None:
    """Reviewed main took 'ready' and 'import_error' fields without checking their types."""
    with start(lambda nonce: [sim(nonce), frame(ready)]) as session:
        assert session.startup.status == "import_error"
        assert complaint in session.startup.message


def test_an_import_traceback_is_cut_on_the_trusted_side() -> None:
    huge = "x" * 1_000_000 + "\nImportError: the end"
    report = {"type": "import_error", "traceback": huge, "out_of_memory": False, "exit_code": None, "signal": None}
    with start(lambda nonce: [sim(nonce), frame({**report, "scratch_dirty": False, **NO_OUTPUT})]) as session:
        assert session.startup.status == "import_error"
        assert session.startup.message.endswith("ImportError: the end")
        assert len(session.startup.message) <= len("policy import failed:\n") + MAX_TRACEBACK_CHARS


def test_output_announced_beyond_the_limit_is_refused() -> None:
    report = {"type": "import_error", "traceback": "t", "out_of_memory": False, "exit_code": 1, "signal": None}
    sizes = {**NO_OUTPUT, "stdout_bytes": 10 * 1024 * 1024}
    with start(lambda nonce: [sim(nonce), frame({**report, "scratch_dirty": False, **sizes})]) as session:
        assert session.startup.status == "import_error"
        # Refused from the announcement: the 10 MiB never come, and are not waited for.
        assert "stdout capture of 10485760 bytes (0 dropped) is outside 0..1048576" in session.startup.message


@pytest.mark.parametrize(
    ("running", "outside", "end"),
    [
        (False, True, ("crash", "scripted", True)),
        (False, False, ("crash", "scripted", False)),
        (True, False, ("crash", "sandbox still running but stopped answering", False)),
    ],
    ids=["killed-from-outside", "died-of-its-own-error", "still-running"],
)
def test_only_a_sandbox_killed_from_outside_is_replayed(
    running: bool, outside: bool, end: tuple[str, str, bool]
) -> None:
    """The red team's round 2 made the harness crash (its file limit lowered to 3 with prlimit) and the worker,
    which took any stopped sandbox for one killed from outside, replayed the episode: a second look at a hidden
    episode the policy had asked for. Now only a kill from outside (the engine, the host) counts as gone."""
    with start(lambda nonce: [sim(nonce), frame(READY)]) as session:
        backend = session._backend
        assert isinstance(backend, Scripted)
        backend.running, backend.outside = running, outside
        assert session.sandbox_end() == end
