"""Asking before an action that is hard to undo (a bulk disqualification, many reruns): ``--yes`` answers for the
organiser, a script without a terminal must give it."""

from __future__ import annotations

import sys
from typing import TextIO

from layersched.sdk.errors import ConfigError


def confirm(question: str, *, assume_yes: bool, stdin: TextIO | None = None, stderr: TextIO | None = None) -> bool:
    """Whether to go ahead: True with ``assume_yes``; else the answer typed at the terminal (y or yes). Without a
    terminal to ask on, ConfigError saying to add --yes (nothing is done)."""
    if assume_yes:
        return True
    stdin = stdin if stdin is not None else sys.stdin
    stderr = stderr if stderr is not None else sys.stderr
    if not stdin.isatty():
        raise ConfigError(f"{question} There is no terminal to ask on: add --yes to go ahead (nothing was done)")
    stderr.write(f"{question} [y/N] ")
    stderr.flush()
    return stdin.readline().strip().lower() in ("y", "yes")
