"""The identity of a track's rules.

Every result records ``SIM_VERSION`` and its track's ``rules_hash``. The version is bumped by hand whenever the
behaviour of a model changes; the rules hash is computed from the source of the package that defines the track, so a
result produced by edited rules can never pass for one produced by the released ones.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

SIM_VERSION = "1.0.0"

# What a track's rules are written in: its Python modules and C sources (the lab's observe() kernel, _observe.c).
# Data files are not rules: what a scenario reads of them is in its own hash (the lab's catalog, by content).
RULE_FILES = ("*.py", "*.c")
# A track's modules that are not rules: its schedules' record and drawing (issue 33) replay the rules, through the
# trusted episode's own checks, and draw what they did; an edit to them changes no episode, score or seed.
NOT_RULES = ("schedule.py", "render.py")


def package_rules_hash(package_dir: Path) -> str:
    """The rules identity of a track, which lives wholly in its package: every rule file's (``RULE_FILES``) path and
    bytes, the starter kit's and the schedules' (``NOT_RULES``) excepted (a student's template is not a rule, nor is a
    drawing of what the rules did). Every track's, the lab's included."""
    digest = hashlib.sha256()
    files = sorted({path for pattern in RULE_FILES for path in package_dir.rglob(pattern)})
    for path in files:
        relative = path.relative_to(package_dir)
        if relative.parts[0] == "starter" or relative.as_posix() in NOT_RULES:
            continue
        digest.update(relative.as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()
