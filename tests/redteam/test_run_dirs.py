"""Run directories are removed only when the worker that owns them is gone, whatever its PID says; channel sockets
can be reached by the sandbox's user only (issue 15, findings 8 and 15).

Reviewed main judged a run directory dead when ``os.kill(pid, 0)`` failed for the PID in its name. Worker replicas
of a compose deployment share ``TMPDIR`` and each has a PID namespace of its own: worker B's start swept worker A's
live directories, and A's next honest evaluation failed ``import_error: bundle has no policy.py``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from layersched.worker.sandbox import run_dirs
from layersched.worker.sandbox.run_dirs import LOCK_NAME, RUN_DIR_PREFIX, RunDir, sweep_dead_run_dirs

OWNER = """
import sys, time
from layersched.worker.sandbox.run_dirs import RunDir
run = RunDir.create()
print(run.path, flush=True)
time.sleep(3600)
"""


@pytest.fixture
def tmp_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_a_live_directory_is_kept_whatever_pid_its_name_has(tmp_root: Path) -> None:
    run = RunDir.create()
    # As another worker's replica sees it: a PID from a namespace it cannot see, so os.kill(pid, 0) fails.
    elsewhere = run.path.with_name(f"{RUN_DIR_PREFIX}999999999-abcdef")
    run.path.rename(elsewhere)
    run.path = elsewhere
    try:
        assert sweep_dead_run_dirs(force=True) == 0
        assert elsewhere.is_dir()
    finally:
        run.remove()
    assert not elsewhere.exists()


def test_a_dead_workers_directory_is_removed() -> None:
    with tempfile.TemporaryDirectory() as root:
        env = {**os.environ, "TMPDIR": root}
        owner = subprocess.Popen([sys.executable, "-c", OWNER], stdout=subprocess.PIPE, text=True, env=env)
        assert owner.stdout is not None
        path = Path(owner.stdout.readline().strip())
        sweep = [
            sys.executable,
            "-c",
            "from layersched.worker.sandbox.run_dirs import sweep_dead_run_dirs as s; print(s())",
        ]
        alive = subprocess.run(sweep, capture_output=True, text=True, env=env, check=True)
        assert (alive.stdout.strip(), path.is_dir()) == ("0", True)
        owner.kill()  # SIGKILL: no clean-up of its own
        owner.wait()
        owner.stdout.close()
        dead = subprocess.run(sweep, capture_output=True, text=True, env=env, check=True)
        assert (dead.stdout.strip(), path.exists()) == ("1", False)


def test_a_directory_without_a_lock_is_removed_only_when_old(tmp_root: Path) -> None:
    young = tmp_root / f"{RUN_DIR_PREFIX}1-young"
    old = tmp_root / f"{RUN_DIR_PREFIX}1-old"
    for path in (young, old):
        (path / "bundle").mkdir(parents=True)
    past = time.time() - run_dirs.UNLOCKED_MAX_AGE_SECONDS - 60
    os.utime(old, (past, past))
    assert sweep_dead_run_dirs(force=True) == 1
    assert young.is_dir() and not old.exists()


def test_the_lock_file_is_in_place_and_held_from_the_start(tmp_root: Path) -> None:
    import fcntl

    run = RunDir.create()
    try:
        assert sorted(p.name for p in run.path.iterdir()) == [LOCK_NAME]
        fd = os.open(run.path / LOCK_NAME, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    finally:
        run.remove()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a socket to another user needs root")
def test_the_channel_socket_is_the_sandbox_users_alone() -> None:
    """Reviewed main left it mode 0666: any local user on a worker host could connect to a sandbox's channel."""
    run = RunDir.create()  # in the host's /tmp, which every user may traverse, as in production
    directory, listener = run.new_channel(10001)
    path = directory / "chan.sock"
    try:
        st = path.stat()
        assert (st.st_uid, st.st_mode & 0o777) == (10001, 0o600)
        assert _connects_as(path, 10001) == "connected"
        assert _connects_as(path, 65534) == "refused: PermissionError"
    finally:
        listener.close()
        run.remove()


def _connects_as(path: Path, uid: int) -> str:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            os.setgid(uid)
            os.setuid(uid)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(str(path))
            result = "connected"
        except OSError as exc:
            result = f"refused: {type(exc).__name__}"
        os.write(write, result.encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as f:
        return f.read()
