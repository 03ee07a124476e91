"""Run directories: where a sandbox's bundle copy and its channel live on the host while a worker uses them.

A run directory is ``$TMPDIR/layersched-run-<pid>-<random>`` (mode 0711: the sandbox's user may reach what is
mounted from it by name, but not list it), holding ``.lock``, the staged ``bundle/`` and one ``chan-<n>/`` per
sandbox start, each with the socket the sandbox connects to. Every start gets a new channel directory, so a
container being removed in the background, which still has its old one mounted, can never reach the socket of its
replacement.

The worker process that made a run directory holds an exclusive ``flock`` on its ``.lock`` until it removes it;
the kernel drops the lock when the process dies, however it dies. Worker replicas of a compose deployment share
``TMPDIR`` but each has a PID namespace of its own, so a PID says nothing about whose directory it is (the pid in
the name is only for people reading it): a directory is dead when its lock can be taken, and only then removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path

log = logging.getLogger(__name__)

RUN_DIR_PREFIX = "layersched-run-"
LOCK_NAME = ".lock"
SOCKET_NAME = "chan.sock"
# A run directory without a lock file is one being created (for a moment) or left by an older version.
UNLOCKED_MAX_AGE_SECONDS = 3600.0


class RunDir:
    """A run directory owned by this process (its lock held) until ``remove``."""

    def __init__(self, path: Path, lock_fd: int) -> None:
        self.path = path
        self._lock_fd = lock_fd
        self._channels = 0

    @classmethod
    def create(cls) -> RunDir:
        path = Path(tempfile.mkdtemp(prefix=f"{RUN_DIR_PREFIX}{os.getpid()}-"))
        path.chmod(0o711)
        # Locked under another name, then renamed: a sweep that finds .lock always finds it locked.
        fd = os.open(path / f"{LOCK_NAME}.new", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)  # a new file nobody else has open: never blocks
        os.rename(path / f"{LOCK_NAME}.new", path / LOCK_NAME)
        return cls(path, fd)

    def new_channel(self, sandbox_uid: int | None) -> tuple[Path, socket.socket]:
        """A fresh channel directory and the socket listening in it, connectable only by ``sandbox_uid`` (or by
        this process's user when None)."""
        self._channels += 1
        directory = self.path / f"chan-{self._channels}"
        directory.mkdir(mode=0o711)
        return directory, listen(directory / SOCKET_NAME, sandbox_uid)

    def remove(self) -> None:
        """Delete the directory and give up its lock (idempotent)."""
        shutil.rmtree(self.path, ignore_errors=True)
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1


# A Unix socket's path fits in sockaddr_un's sun_path: 108 bytes on Linux, one of them the terminating NUL.
MAX_SOCKET_PATH_BYTES = 107


def check_socket_path(path: Path) -> None:
    """Raise ``OSError`` naming ``path`` and the fix when it is too long for a Unix socket: bind() would say only
    "AF_UNIX path too long", and every evaluation under that ``TMPDIR`` would fail alike."""
    length = len(os.fsencode(path))
    if length > MAX_SOCKET_PATH_BYTES:
        raise OSError(
            f"the sandbox's channel socket {str(path)!r} takes {length} bytes, over the {MAX_SOCKET_PATH_BYTES} a "
            f"Unix socket's path may have: set TMPDIR to a shorter directory (it is {tempfile.gettempdir()!r}; "
            f"at most {MAX_SOCKET_PATH_BYTES - (length - len(os.fsencode(tempfile.gettempdir())))} bytes, /tmp say)"
        )


_warned_chown = False


def listen(path: Path, sandbox_uid: int | None) -> socket.socket:
    """A Unix socket listening at ``path`` that only ``sandbox_uid`` (and root) may connect to.

    Giving the socket to another user needs root (the worker runs as root to drive the Docker engine). A worker
    that is not root leaves it connectable by every local user, and says so once: the per-start nonce that the
    harness must echo (``runner``) then is what keeps a local impostor out.
    """
    global _warned_chown
    check_socket_path(path)
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))
        if sandbox_uid is None or sandbox_uid == os.geteuid():
            path.chmod(0o600)
        else:
            try:
                os.chown(path, sandbox_uid, sandbox_uid)
                path.chmod(0o600)
            except PermissionError:
                path.chmod(0o666)
                if not _warned_chown:
                    _warned_chown = True
                    log.warning(
                        "the worker is not root: sandbox channel sockets cannot be given to uid %d and are "
                        "connectable by every local user (the start nonce still has to be echoed)",
                        sandbox_uid,
                    )
        listener.listen(4)
    except BaseException:
        listener.close()
        raise
    return listener


_swept = False


def sweep_dead_run_dirs(*, force: bool = False) -> int:
    """Remove the run directories whose owner is gone (once per process unless ``force``); how many were removed."""
    global _swept
    if _swept and not force:
        return 0
    _swept = True
    removed = 0
    now = time.time()
    for path in Path(tempfile.gettempdir()).glob(f"{RUN_DIR_PREFIX}*"):
        if path.is_dir() and _dead(path, now):
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


def _dead(path: Path, now: float) -> bool:
    try:
        fd = os.open(path / LOCK_NAME, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        with contextlib.suppress(OSError):
            return now - path.stat().st_mtime > UNLOCKED_MAX_AGE_SECONDS
        return False
    except OSError:
        return False  # another user's
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False  # its worker holds it
    finally:
        os.close(fd)  # (a lock we took goes with it; the directory is removed right after)
    return True
