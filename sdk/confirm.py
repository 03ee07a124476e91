"""Confirmation of the organisers' actions that cannot be undone (``admin publish``, ``disqualify``, ``evalset
reveal``): asked on a terminal, given with ``--yes`` in scripts.

Without a terminal and without ``--yes`` the action is refused rather than taken: a script that pipes into the CLI
must say ``--yes`` once, on purpose, and nothing irreversible happens because stdin happened not to be a terminal.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from layersched.sdk.errors import ConfigError


def add_yes_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--yes", "-y", action="store_true", help="do it without asking (scripts: no terminal)")


def confirm(
    what: str,
    *,
    yes: bool,
    interactive: Callable[[], bool] = lambda: sys.stdin.isatty(),
    ask: Callable[[str], str] = input,
) -> None:
    """Go on when ``yes`` or when the person at the terminal answers y; else ``ConfigError`` naming ``what`` was not
    done. ``what`` is the action in words (``publish the private leaderboard of phase final``)."""
    if yes:
        return
    if not interactive():
        raise ConfigError(f"not done: {what} asks for confirmation; pass --yes to do it without a terminal")
    print(f"{what}: this cannot be undone.", file=sys.stderr)
    try:
        answer = ask("Go on? [y/N] ").strip().lower()
    except EOFError:
        answer = ""
    if answer not in ("y", "yes"):
        shown = repr(answer) if answer else "nothing"
        raise ConfigError(f"not done: {what} (answered {shown}, not y)")
