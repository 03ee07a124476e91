"""The check a starter kit's training script runs first: the packages it trains with can be imported here.

Training needs torch, and the kits that train on a track's Gymnasium env need gymnasium too; the SDK installs them
only with its extras. Without this check a missing gymnasium shows as a traceback minutes into a run, after behaviour
cloning, when the script first makes its env. So each script names what it needs before anything slow, and stops at
once with one line naming the missing module and the extras to install. This module imports neither itself (it must
run where they are missing), and nothing of layersched imports it: the kits' scripts do, from the installed package.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

# What every kit's README tells a student to install: the SDK with both extras (pyproject.toml's `torch` and `gym`).
INSTALL = 'pip install "layersched[torch,gym]"'
# An import's own message is kept to one line of at most this many characters, so the error stays one line.
MAX_REASON = 200


def missing_modules(modules: tuple[str, ...]) -> list[tuple[str, str]]:
    """Each of ``modules`` that cannot be imported here, with the first line of why."""
    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        # OSError too: a torch whose native libraries do not load (a wheel for another platform) raises it.
        except (ImportError, OSError) as exc:
            reason = (str(exc).splitlines() or [type(exc).__name__])[0][:MAX_REASON]
            missing.append((name, reason))
    return missing


def require(*modules: str) -> None:
    """Exit (status 1) with one line on stderr if any of ``modules`` cannot be imported: which, why, and the pip line
    that installs them. Call it at the top of a training script, before its own imports of them."""
    missing = missing_modules(modules)
    if not missing:
        return
    script = Path(sys.argv[0]).name or "this script"
    needs = " and ".join(modules)
    lacks = "; ".join(f"{name} ({reason})" for name, reason in missing)
    raise SystemExit(f"error: {script} trains with {needs}, and this Python cannot import {lacks}: {INSTALL}")
