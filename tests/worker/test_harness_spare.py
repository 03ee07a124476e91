"""The harness forks each episode's process ahead of its episode (a spare), which imports the policy afresh; these
tests drive a real ``Harness`` against a listening Unix socket, with real forked processes.

The sandbox contract tests (test_runner_process.py, test_sandbox_docker.py) cover spares in normal use: every
episode there runs in one. Here: the first spare's import report, a spare older than its scenario, a spare that
died waiting, the captures that no child inherits, and the scratch clean-up.
"""

from __future__ import annotations

import ctypes
import os
import random
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from layersched.sim.tracks.layers_v1.sandbox import nodes_to_wire
from layersched.sim.tracks.layers_v1.scenario import Scenario
from layersched.sim.tracks.layers_v1.workload import draw_episode
from layersched.worker.sandbox import protocol
from layersched.worker.sandbox.capture import Capture
from layersched.worker.sandbox.harness import Harness
from layersched.worker.sandbox.isolation import empty_scratch
from layersched.worker.sandbox.wire import replica_from_frame, scenario_frame

POLICIES = Path(__file__).parent / "policies"
DEADLINE = 10.0


class Channel:
    """The trusted side of a harness under test: its listener, its control connection, frames with deadlines."""

    def __init__(self, harness: Harness, listener: socket.socket, ctl: socket.socket) -> None:
        self.harness, self.listener, self.ctl = harness, listener, ctl

    def recv(self) -> dict[str, object]:
        return protocol.recv(self.ctl, max_size=protocol.MAX_FRAME_FROM_SANDBOX, deadline=_deadline())

    def output(self, report: dict[str, object]) -> tuple[bytes, bytes]:
        sizes = int(report["stdout_bytes"]), int(report["stderr_bytes"])  # type: ignore[call-overload]
        return tuple(protocol.recv_exact(self.ctl, n, _deadline()) for n in sizes)  # type: ignore[return-value]


def _deadline() -> float:
    return time.monotonic() + DEADLINE


@pytest.fixture
def channel(tmp_path: Path) -> Iterator[Channel]:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = str(tmp_path / "channel.sock")
    listener.bind(path)
    listener.listen(4)
    listener.settimeout(DEADLINE)
    harness = Harness(path, POLICIES / "greedy", output_bytes=1024)
    ctl, _ = listener.accept()
    try:
        yield Channel(harness, listener, ctl)
    finally:
        if harness.spare is not None:
            harness._discard(harness.spare)
        harness.ctl.close()
        ctl.close()
        listener.close()


def serve_one(channel: Channel, message: dict[str, object], scenario: Scenario) -> tuple[dict[str, object], bytes]:
    """Run ``message`` (an episode frame) in the harness while playing the trusted side of its episode connection;
    returns (the harness's exited report, the episode's stdout)."""
    errors: list[BaseException] = []

    def harness_side() -> None:
        try:
            channel.harness.run_episode(message)
        except BaseException as exc:  # reported to the test thread
            errors.append(exc)

    thread = threading.Thread(target=harness_side)
    thread.start()
    conn, _ = channel.listener.accept()
    with conn:
        hello = protocol.recv(conn, max_size=protocol.MAX_FRAME_FROM_SANDBOX, deadline=_deadline())
        assert hello == {"type": "hello", "episode_id": message["episode_id"], "token": message["token"]}
        specs, tasks = draw_episode(scenario, random.Random(1))
        protocol.send(conn, {"type": "start", "seed": 7, "episode": {"nodes": nodes_to_wire(specs)}})
        for step, task in enumerate(tasks):
            conn.sendall(protocol.encode_task(step, (task.arrival, task.image, task.cycles), 1000 + step))
            reply = protocol.recv(conn, max_size=protocol.MAX_FRAME_FROM_SANDBOX, deadline=_deadline())
            assert (reply["type"], reply["step"], reply["nonce"]) == ("action", step, 1000 + step)
        protocol.send(conn, {"type": "end"})
        protocol.recv(conn, max_size=protocol.MAX_FRAME_FROM_SANDBOX, deadline=_deadline())  # timing
    report = channel.recv()
    stdout, _ = channel.output(report)
    thread.join(DEADLINE)
    assert not errors, errors
    return report, stdout


def episode(episode_id: str, scenario: str = "lab") -> dict[str, object]:
    return {"type": "episode", "episode_id": episode_id, "scenario": scenario, "token": f"token-{episode_id}"}


def test_the_first_spare_reports_its_import_and_serves_the_first_episode(channel: Channel) -> None:
    assert channel.harness.start() is True
    ready = channel.recv()
    assert ready["type"] == "ready" and ready["preloaded"] == []
    first = channel.harness.spare
    assert first is not None
    scenario = Scenario(n_tasks=5)
    frame = scenario_frame("lab", "layers-v1", scenario)
    channel.harness.replicas["lab"], _ = replica_from_frame(frame)  # what a scenario frame does
    channel.harness.scenarios["lab"] = frame
    report, _ = serve_one(channel, episode("e0"), scenario)
    assert (report["type"], report["exit_code"], report["signal"], report["scratch_dirty"]) == (
        "exited",
        0,
        None,
        False,
    )
    assert channel.harness.spare is not None and channel.harness.spare.pid != first.pid  # the next one, forked ahead


def test_a_spare_older_than_its_scenario_builds_the_replica_from_the_assignment(channel: Channel) -> None:
    assert channel.harness.start() is True
    channel.recv()  # ready
    spare = channel.harness.spare
    assert spare is not None and spare.replicas == frozenset()  # forked before any scenario arrived
    scenario = Scenario(n_tasks=5, arrival_rate=0.5)
    frame = scenario_frame("cloudy", "layers-v1", scenario)
    channel.harness.scenarios["cloudy"] = frame
    report, _ = serve_one(channel, episode("e1", scenario="cloudy"), scenario)
    assert (report["exit_code"], report["signal"]) == (0, None)


def test_a_spare_that_died_waiting_reports_its_death_as_the_episodes(channel: Channel) -> None:
    assert channel.harness.start() is True
    channel.recv()  # ready
    spare = channel.harness.spare
    assert spare is not None
    channel.harness.scenarios["lab"] = scenario_frame("lab", "layers-v1", Scenario(n_tasks=5))
    os.kill(spare.pid, signal.SIGKILL)  # the out-of-memory killer, say: it is the episode's end, not retried
    channel.harness.run_episode(episode("e2"))
    report = channel.recv()
    channel.output(report)
    assert (report["type"], report["signal"], report["exit_code"]) == ("exited", signal.SIGKILL, None)


def test_an_unused_spare_ends_when_discarded(channel: Channel) -> None:
    assert channel.harness.start() is True
    channel.recv()
    spare = channel.harness.spare
    assert spare is not None
    channel.harness._discard(spare)
    with pytest.raises(ChildProcessError):
        os.waitpid(spare.pid, os.WNOHANG)
    with pytest.raises(ProcessLookupError):
        os.kill(spare.pid, 0)


def test_an_import_error_is_reported_with_the_imports_output(tmp_path: Path) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = str(tmp_path / "channel.sock")
    listener.bind(path)
    listener.listen(1)
    listener.settimeout(DEADLINE)
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "policy.py").write_text("print('hello from the import')\nraise SystemExit(3)\n")
    harness = Harness(path, bundle, output_bytes=1024)
    ctl, _ = listener.accept()
    try:
        assert harness.start() is False
        report = protocol.recv(ctl, max_size=protocol.MAX_FRAME_FROM_SANDBOX, deadline=_deadline())
        stdout = protocol.recv_exact(ctl, int(report["stdout_bytes"]), _deadline())
        protocol.recv_exact(ctl, int(report["stderr_bytes"]), _deadline())
        assert report["type"] == "import_error" and report["traceback"].rstrip().endswith("SystemExit: 3")
        assert stdout == b"hello from the import\n"
    finally:
        harness.ctl.close()
        ctl.close()
        listener.close()


def test_captured_bytes_are_in_no_child_process() -> None:
    """What an episode printed is read into memory that no process forked afterwards has: the next episode's
    process could otherwise find it by reading its own memory."""
    capture = Capture(4096)
    read, write = os.pipe()
    os.write(write, b"secret of an earlier episode")
    os.close(write)
    assert capture.read_from(read)
    os.close(read)
    assert capture.data == b"secret of an earlier episode"
    address = ctypes.addressof(ctypes.c_char.from_buffer(capture._buffer))
    pid = os.fork()
    if pid == 0:  # the child: is the capture's page mapped here?
        with open("/proc/self/maps") as maps:
            mapped = any(
                int(lo, 16) <= address < int(hi, 16) for lo, hi in (line.split()[0].split("-") for line in maps)
            )
        os._exit(1 if mapped else 0)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0, "the capture's memory was inherited by a forked child"
    capture.reset()
    assert (capture.data, capture.size, capture.dropped) == (b"", 0, 0)


def test_capture_keeps_the_first_bytes_and_counts_the_rest() -> None:
    capture = Capture(10)
    read, write = os.pipe()
    os.write(write, b"0123456789abcdef")
    os.close(write)
    while capture.read_from(read):
        pass
    os.close(read)
    assert (capture.data, capture.dropped) == (b"0123456789", 6)


def test_empty_scratch_removes_everything_and_follows_no_link(tmp_path: Path) -> None:
    scratch, outside = tmp_path / "tmp", tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not scratch")
    deep = scratch / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "file").write_text("x")
    (scratch / "link-to-outside").symlink_to(outside)
    (scratch / "a" / "locked").mkdir()
    (scratch / "a" / "locked" / "inside").write_text("y")
    (scratch / "a" / "locked").chmod(0)  # what a policy may do to its own folder
    assert empty_scratch((str(scratch),)) is True
    assert list(scratch.iterdir()) == []
    assert (outside / "keep.txt").read_text() == "not scratch"
