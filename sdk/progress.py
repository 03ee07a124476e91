"""Text progress bars on stderr, with no dependency.

On a terminal the bar redraws itself in place (at most ten times a second). Elsewhere (CI logs, pipes) it prints a
plain line when something changed and at least ``interval`` seconds passed, and always the final state, so logs
stay short but a long wait is still visibly alive.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def format_bytes(n: float) -> str:
    """``1500`` -> ``'1.5 kB'`` (powers of 1000, as the server's limits are)."""
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


class ProgressBar:
    """``bar = ProgressBar("upload", total); bar.update(done); bar.close()``; ``unit="bytes"`` formats sizes."""

    def __init__(
        self,
        label: str,
        total: int | None = None,
        *,
        unit: str = "",
        stream: TextIO | None = None,
        width: int = 30,
        interval: float = 10.0,
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.interval = interval
        self.done = 0
        self.note = ""
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last_draw = float("-inf")
        self._last_text = ""
        self._closed = False

    def update(self, done: int, total: int | None = None, note: str = "") -> None:
        """Set the absolute progress (and optionally the total and a short note such as the state)."""
        self.done = done
        if total is not None:
            self.total = total
        self.note = note
        now = time.monotonic()
        if self._tty:
            if now - self._last_draw >= 0.1:
                self._draw(now, end="")
        elif self.render() != self._last_text and now - self._last_draw >= self.interval:
            self._draw(now, end="\n")

    def close(self, note: str | None = None) -> None:
        """Draw the final state and end the line."""
        if self._closed:
            return
        self._closed = True
        if note is not None:
            self.note = note
        if self._tty or self.render() != self._last_text:
            self._draw(time.monotonic(), end="\n")

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def render(self) -> str:
        if self.total:
            share = min(max(self.done / self.total, 0.0), 1.0)
            filled = round(share * self.width)
            bar = "#" * filled + "." * (self.width - filled)
            counts = f"{self._fmt(self.done)}/{self._fmt(self.total)}"
            text = f"{self.label} [{bar}] {share:4.0%} {counts}"
        elif self.done:
            text = f"{self.label} {self._fmt(self.done)}"
        else:  # nothing known yet (a queued evaluation has no episode count): a bare 0 would read as a count
            text = self.label
        return f"{text}  {self.note}" if self.note else text

    def _fmt(self, n: int) -> str:
        return format_bytes(n) if self.unit == "bytes" else str(n)

    def _draw(self, now: float, end: str) -> None:
        text = self.render()
        prefix = "\r\x1b[K" if self._tty else ""
        self.stream.write(prefix + text + end)
        self.stream.flush()
        self._last_draw = now
        self._last_text = text
