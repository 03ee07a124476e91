"""What a baseline table's process imports: ``python -m layersched.sim`` run in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence


def modules_a_table_imports(arguments: Sequence[str], modules: Sequence[str]) -> list[str]:
    """Those of ``modules`` that ``layersched.sim.cli.main(arguments)`` imports (it must succeed), sorted."""
    code = (
        "import json, sys\n"
        "from layersched.sim.cli import main\n"
        f"assert main({list(arguments)!r}) == 0\n"
        f"print(json.dumps(sorted(m for m in {list(modules)!r} if m in sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    imported: list[str] = json.loads(result.stdout.splitlines()[-1])
    return imported
