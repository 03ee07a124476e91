"""The harness's preload (issue 29, item 5): it imports what a bundle's text names only where that can be imported,
and leaves anything else to the policy's own import (a kit that imports torch only when it has weights runs in a
process sandbox without torch; the harness failing the whole evaluation made it the student's import_error)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PRELOAD = """
import sys
from pathlib import Path
from layersched.worker.sandbox.preload import preload_site_modules
print(preload_site_modules(Path(sys.argv[1]), modules=("no_such_module_29", "json", "csv")))
print("no_such_module_29" in sys.modules, "json" in sys.modules)
"""


def test_only_what_can_be_imported_is_preloaded_and_nothing_raises(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "policy.py").write_text(
        "import json\ntry:\n    import no_such_module_29\nexcept ImportError:\n    no_such_module_29 = None\n\n\n"
        "def policy(env, task, rng):\n    return 0\n"
    )
    # A fresh interpreter: the preload configures torch and seeds numpy's globals, which this process must keep.
    result = subprocess.run(
        [sys.executable, "-c", PRELOAD, str(bundle)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["['json']", "False True"]  # csv: the bundle does not name it
