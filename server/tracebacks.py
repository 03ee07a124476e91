"""A failed evaluation's message as the submission page shows it: one line saying what failed, and the traceback
once, cut to the policy's own frames.

The sandbox reports an exception with its whole traceback, the episode process's and the import machinery's frames
included (``worker/sandbox/episode_process.py``), and the same text reaches the submission's error and its episode's
row. A student needs the frames of their own files (the bundle's: ``/bundle/...`` in the Docker sandbox, a staged
``.../bundle/...`` in the process sandbox) and the exception; the rest is the service's plumbing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TRACEBACK_HEAD = "Traceback (most recent call last):"
_FRAME = re.compile(r'^  File "(?P<path>[^"]*)", line \d+')


@dataclass(frozen=True)
class Failure:
    """``summary``: what failed, in one line (the exception's last line included); ``traceback``: the policy's
    frames and the exception (None: the message holds no traceback)."""

    summary: str
    traceback: str | None


def split_failure(message: str) -> Failure:
    head, found, rest = message.partition(TRACEBACK_HEAD)
    if not found:
        return Failure(message, None)
    frames: list[tuple[str, list[str]]] = []  # (the frame's file, its lines)
    tail: list[str] = []
    for line in rest.splitlines()[1:]:
        frame = _FRAME.match(line)
        if frame is not None:
            frames.append((frame.group("path"), [line]))
            tail = []
        elif line.startswith("    ") and frames and not tail:
            frames[-1][1].append(line)  # the frame's source line and its ^^^ markers
        elif line.strip():
            tail.append(line)  # the exception (or a chained one's text, which the next frame ends)
    own = [lines for path, lines in frames if "/bundle/" in path]
    kept = own or [lines for _, lines in frames[-1:]]  # none of the policy's own: where it was raised
    exception = tail[-1] if tail else ""
    summary = f"{head.rstrip().rstrip(':')}: {exception}" if exception else head.rstrip()
    text = "\n".join([TRACEBACK_HEAD, *(line for lines in kept for line in lines), *tail])
    return Failure(summary, text)
