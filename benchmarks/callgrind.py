"""A fresh interpreter's instruction count under callgrind: the steady measure of the ``count_*.py`` benchmarks.

Wall time on these VMs drifts with the host's load; the instructions of the same binary, input and environment do
not. Each count runs ``python SCRIPT ARGS...`` under ``valgrind --tool=callgrind`` with one BLAS thread (idle
OpenBLAS threads spin for a while after numpy loads, and callgrind counts them too) and a fixed hash seed (set and
dict orders, and so some counts, follow it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def require_valgrind() -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")


def instructions(script: str | Path, arguments: list[str]) -> int:
    """Instructions callgrind counts for ``python script *arguments`` (SystemExit naming the run if it fails)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, str(script)]
        result = subprocess.run([*command, *arguments], env=env, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise SystemExit(f"callgrind run of {arguments} failed ({result.returncode}):\n{result.stderr[-2000:]}")
        match = re.search(r"^summary:\s+(\d+)", out.read_text(), re.MULTILINE)
        if match is None:
            raise SystemExit(f"no instruction total in callgrind's output for {arguments}")
        return int(match.group(1))
