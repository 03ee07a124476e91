"""The SDK's list of what the sandbox can import (``layersched.sdk.sandbox_modules``) is the image's (issue 29,
item 4): ``validate`` refuses an import the sandbox lacks, so a list that drifted from the image would either fail
good policies locally or let a student lose a submission to ``import_error``."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from layersched.sdk import sandbox_modules

SANDBOX = Path(__file__).resolve().parents[2] / "worker" / "sandbox"

LIST_MODULES = """
import importlib.util, pkgutil, sys
site = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
print(" ".join(sorted({m.name for m in pkgutil.iter_modules(site)})))
print(" ".join(sorted(m for m in sys.stdlib_module_names if importlib.util.find_spec(m) is not None)))
print(f"{sys.version_info.major}.{sys.version_info.minor}")
import numpy, torch
print(numpy.__version__, torch.__version__.split("+")[0])
"""


def _in_image(image: str, code: str) -> str:
    """What ``code`` prints in a container of ``image`` (no network)."""
    argv = ["docker", "run", "--rm", "--network", "none", image, "python3", "-c", code]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout


def test_the_pinned_wheels_are_the_build_files_pins() -> None:
    script = (SANDBOX / "build_image.sh").read_text()
    dockerfile = (SANDBOX / "Dockerfile").read_text()
    numpy, torch = sandbox_modules.PINNED["numpy"], sandbox_modules.PINNED["torch"]
    assert re.search(rf'^NUMPY_VERSION="{re.escape(numpy)}"$', script, re.MULTILINE)
    assert f"torch-{torch}+cpu-cp311-cp311" in script
    assert f'"torch=={torch}+cpu" "numpy=={numpy}"' in dockerfile
    assert "FROM python:3.11-slim" in dockerfile and sandbox_modules.PYTHON == "3.11"


@pytest.mark.docker
def test_the_lists_are_the_built_images(sandbox_image: str) -> None:
    site, stdlib, python, versions = _in_image(sandbox_image, LIST_MODULES).splitlines()
    assert set(site.split()) == sandbox_modules.SITE_MODULES
    assert set(stdlib.split()) == sandbox_modules.STDLIB_MODULES
    assert python == sandbox_modules.PYTHON
    assert versions.split() == [sandbox_modules.PINNED["numpy"], sandbox_modules.PINNED["torch"]]
    # layersched is a namespace package there (pkgutil does not list it): the simulator imports, the SDK does not.
    probe = (
        "import layersched.sim.tracks.layers_v1.env\n"
        "try:\n    import layersched.sdk\nexcept ImportError:\n    print('no sdk')\n"
    )
    assert _in_image(sandbox_image, probe) == "no sdk\n"
    assert sandbox_modules.sandbox_has("layersched.sim.tracks.layers_v1.env") and not sandbox_modules.sandbox_has(
        "layersched.sdk"
    )
