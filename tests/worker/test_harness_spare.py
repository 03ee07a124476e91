"""The harness forks each episode process ahead of its episode (a spare); these tests drive a real ``Harness``
against a listening Unix socket, with real forked processes, and check how it replaces a spare that cannot serve.

The sandbox contract tests (test_runner_process.py, test_sandbox_docker.py) cover spares in normal use: every
episode there after the first runs in one.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from layersched.sim.env import ClusterEnv
from layersched.sim.scenario import Scenario
from layersched.sim.workload import draw_episode
from layersched.worker import protocol
from layersched.worker.harness import Harness, _Spare, nodes_to_wire

POLICIES = Path(__file__).parent / "policies"


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[tuple[Harness, socket.socket]]:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = str(tmp_path / "channel.sock")
    listener.bind(path)
    listener.listen(4)
    listener.settimeout(10)
    harness = Harness(path, POLICIES / "greedy", output_bytes=1024)
    ctl, _ = listener.accept()
    harness.policy = lambda env, task, rng: 0
    harness.envs["lab"] = ClusterEnv(Scenario(n_tasks=5))
    try:
        yield harness, listener
    finally:
        harness._discard_spare()
        harness.ctl.close()
        ctl.close()
        listener.close()


def episode_message(episode_id: str, scenario: str = "lab") -> dict[str, object]:
    specs, _ = draw_episode(Scenario(n_tasks=5), random.Random(1))
    return {"type": "episode", "episode_id": episode_id, "scenario": scenario, "seed": 7, "nodes": nodes_to_wire(specs)}


def says_hello(listener: socket.socket, episode_id: str) -> None:
    """The episode process connects and greets with its episode; closing the connection then ends it."""
    conn, _ = listener.accept()
    with conn:
        hello = protocol.recv(conn, max_size=protocol.MAX_FRAME_FROM_SANDBOX)
    assert hello == {"type": "hello", "episode_id": episode_id}


def reap(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    return status


def finish(process: _Spare) -> None:
    """Reap an episode process whose connection the test has closed, and close the harness's ends of its pipes."""
    reap(process.pid)
    for fd in (process.out_r, process.err_r):
        os.close(fd)


def test_a_spare_serves_the_next_episode(harness):
    h, listener = harness
    h.spare = h._fork_spare()
    forked = h.spare.pid
    process = h._start_episode_process(episode_message("e0"))
    assert process.pid == forked and h.spare is None
    says_hello(listener, "e0")
    finish(process)


def test_a_spare_that_died_waiting_is_replaced(harness):
    h, listener = harness
    h.spare = h._fork_spare()
    dead = h.spare.pid
    os.kill(dead, signal.SIGKILL)
    assert os.WTERMSIG(reap(dead)) == signal.SIGKILL  # gone before its episode: writing to it fails
    process = h._start_episode_process(episode_message("e1"))
    assert process.pid != dead
    says_hello(listener, "e1")
    finish(process)


def test_a_spare_older_than_a_scenario_is_not_used(harness):
    h, listener = harness
    h.spare = h._fork_spare()
    stale = h.spare.pid
    h.envs["cloudy"] = ClusterEnv(Scenario(n_tasks=5, arrival_rate=0.5))
    h.scenarios_changed += 1  # what a scenario frame does
    process = h._start_episode_process(episode_message("e2", scenario="cloudy"))
    assert process.pid != stale
    with pytest.raises(ChildProcessError):  # the stale spare was ended and reaped
        os.waitpid(stale, os.WNOHANG)
    says_hello(listener, "e2")
    finish(process)


def test_an_unused_spare_ends_when_discarded(harness):
    h, _ = harness
    h.spare = h._fork_spare()
    pid = h.spare.pid
    h._discard_spare()
    assert h.spare is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    with contextlib.suppress(OSError):
        os.kill(pid, 0)
        pytest.fail(f"discarded spare {pid} still exists")
