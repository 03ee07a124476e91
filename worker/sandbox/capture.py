"""Bounded output capture in memory that forked processes never inherit.

The harness reads every episode process's stdout and stderr. What an episode prints may describe its hidden
workload, and the harness forks the next episode's process from itself: if those bytes had passed through its heap,
freed but not overwritten, the next episode could find them by reading its own memory. So they are read from the
pipe straight into an anonymous private mapping marked ``MADV_DONTFORK`` (absent from every child) and sent to the
trusted side straight from there, never copied into a Python object.
"""

from __future__ import annotations

import mmap
import os


def _unforked_buffer(size: int) -> mmap.mmap:
    buffer = mmap.mmap(-1, max(size, 1), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    buffer.madvise(mmap.MADV_DONTFORK)
    return buffer


# Where bytes past a capture's limit are read to be counted and dropped; never inherited either.
_DISCARD = _unforked_buffer(1 << 16)


class Capture:
    """Keeps the first ``limit`` bytes of a stream and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buffer = _unforked_buffer(limit)
        self.size = 0
        self.dropped = 0

    def read_from(self, fd: int) -> bool:
        """Read what ``fd`` has (one read); False at end of file."""
        if self.size < self.limit:
            with memoryview(self._buffer) as view:
                n = os.readv(fd, [view[self.size : self.limit]])
            self.size += n
        else:
            n = os.readv(fd, [_DISCARD])
            self.dropped += n
        return n > 0

    def add(self, chunk: bytes) -> None:
        """Append ``chunk`` (what ``read_from`` does with a pipe's bytes)."""
        room = max(0, self.limit - self.size)
        self._buffer[self.size : self.size + min(room, len(chunk))] = chunk[:room]
        self.size += min(room, len(chunk))
        self.dropped += max(0, len(chunk) - room)

    @property
    def data(self) -> bytes:
        """A copy of what was kept (for tests: the harness sends ``view()`` without copying)."""
        return self._buffer[: self.size]

    def view(self) -> memoryview:
        """What was kept, without a copy; release it (``with``) before the next ``reset``."""
        return memoryview(self._buffer)[: self.size]

    def reset(self) -> None:
        """Forget the kept bytes and the count (the memory is zeroed, so nothing of them is left anywhere)."""
        self._buffer.madvise(mmap.MADV_DONTNEED, 0, len(self._buffer))  # private anonymous: reads back as zeros
        self.size = self.dropped = 0
