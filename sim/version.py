"""The identity of the simulator's rules.

Every result records ``SIM_VERSION`` and ``RULES_HASH``. The version is bumped by hand whenever the behaviour of the
model changes; the rules hash is computed from the source of the modules that define that behaviour, so a result
produced by edited rules can never pass for one produced by the released ones.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

SIM_VERSION = "1.0.0"

# The modules whose code decides completion times, workloads, catalogs and what policies observe (_observe.c is
# observe()'s C kernel), by name and where they are. Scoring and the CLI are not rules.
_RULE_MODULES = {
    "env.py": "tracks/layers_v1/env.py",
    "_observe.c": "tracks/layers_v1/_observe.c",
    "workload.py": "tracks/layers_v1/workload.py",
    "catalog.py": "tracks/layers_v1/catalog.py",
    "keyed_random.py": "keyed_random.py",
}


def _rules_hash() -> str:
    digest = hashlib.sha256()
    here = Path(__file__).parent
    for name, path in _RULE_MODULES.items():
        digest.update(name.encode())
        digest.update(b"\0")
        digest.update((here / path).read_bytes())
    return digest.hexdigest()


RULES_HASH = _rules_hash()


def package_rules_hash(package_dir: Path) -> str:
    """The rules identity of a track that lives wholly in its package: every ``.py`` file's path and bytes, the
    starter kit's excepted (a student's template is not a rule). The lab's is ``RULES_HASH``."""
    digest = hashlib.sha256()
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir)
        if relative.parts[0] == "starter":
            continue
        digest.update(relative.as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()
