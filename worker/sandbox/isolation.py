"""What keeps the harness apart from the episodes it supervises, and each episode from the next, inside the sandbox.

The harness is not dumpable (an episode process of the same user cannot ptrace it or read its memory), imports only
from installed places (never the policy's writable working directory), and after each episode waits until the
episode's processes are gone and empties the container's scratch space. It runs inside the sandbox: the standard
library only.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import stat
import sys

# The container's writable places (tmpfs), emptied after every episode.
SCRATCH_DIRS = ("/tmp", "/dev/shm")
_PR_SET_DUMPABLE = 4


def make_undumpable() -> None:
    """Forbid ptrace, ``/proc/<pid>/mem`` and ``pidfd_getfd`` of this process to other processes of its user (the
    episode processes run as the same user). Its children inherit it, and may only undo it for themselves."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0)


def trusted_import_path() -> None:
    """Keep only absolute, installed places on ``sys.path``: ``python -m`` puts the working directory first, and in
    the sandbox that directory is the policy's to write (``/tmp`` in a container, the channel directory in the
    process sandbox). The harness imports track modules after the first episode process imported the policy: a
    module planted there would run as the harness. (The backends also start it with ``-P``; this holds where that
    flag is missing.)"""
    cwd = os.getcwd()
    sys.path[:] = [p for p in sys.path if os.path.isabs(p) and p != cwd]


def empty_scratch(roots: tuple[str, ...]) -> bool:
    """Delete everything under ``roots`` (symlinks are removed, never followed); False if something is left."""
    clean = True
    stack = list(roots)
    folders: list[str] = []
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            clean = False
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    os.chmod(entry.path, stat.S_IRWXU)  # a folder the policy made unreadable is still its own
                    stack.append(entry.path)
                    folders.append(entry.path)
                else:
                    os.unlink(entry.path)
            except OSError:
                clean = False
    for folder in reversed(folders):  # children before their parents
        try:
            os.rmdir(folder)
        except OSError:
            clean = False
    return clean


def others_alive() -> bool:
    """Whether any process of this PID namespace but this one (and PID 1, if that is not this one) still runs;
    zombies are dead."""
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, me):
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # gone meanwhile
        if state != b"Z":
            return True
    return False
