"""The student-side packages (sim, sdk) on the oldest Python that pyproject.toml admits.

``requires-python = ">=3.10"``: students install the SDK and the simulator on whatever Python their lab machine has.
The service and this suite run on 3.11 (the dev tools need it: schemathesis 4.32 requires 3.11), so without this
test nothing would notice a 3.11-only construct; one did slip in once (``KeyedRandom(key)`` fails on 3.10, whose
``random.Random.__new__`` refuses a second argument even from a subclass). It runs tests/sim and tests/sdk with a
3.10 interpreter in a virtual environment kept under ``.layersched/`` (built on first use from the package index,
about a minute; reused while pyproject.toml, the C kernel and the test tools are unchanged), on every core
(pytest-xdist: this suite waits for it meanwhile). Tests that need the server extras or torch skip themselves there;
on 3.11 this suite runs them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OLDEST = "3.10"
VENV = ROOT / ".layersched" / f"py{OLDEST}"
# setuptools: a test builds the package as pip does, from pyproject.toml (the venv's own 65.5 cannot read it).
# pytest-xdist: the suite waits for this run, so it takes every core (203 s -> 123 s on this 2-core machine).
TEST_REQUIREMENTS = [
    "pytest>=8",
    "pytest-timeout>=2.3",
    "pytest-xdist>=3.5",
    "hypothesis>=6",
    "scipy>=1.10",
    "setuptools>=74.1",
]


def _interpreter() -> str:
    """A Python 3.10: pyenv's (this machine kind has one), else one on PATH that is not a pyenv shim (a shim runs
    only the versions pyenv has made active)."""
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = sorted(pyenv_root.glob(f"versions/{OLDEST}.*/bin/python{OLDEST}"))
    if candidates:
        return str(candidates[-1])
    found = shutil.which(f"python{OLDEST}")
    if found is None or Path(found).parent.name == "shims":
        pytest.fail(f"no Python {OLDEST} found ({pyenv_root}/versions/{OLDEST}.* or python{OLDEST} on PATH)")
    return found


def _venv_python() -> Path:
    """The 3.10 environment with the package (editable, with its gym extra) and the test tools installed."""
    python = VENV / "bin" / "python"
    stamp = VENV / "installed.sha256"
    want = hashlib.sha256(
        (ROOT / "pyproject.toml").read_bytes()
        + (ROOT / "sim" / "tracks" / "layers_v1" / "_observe.c").read_bytes()
        + "\n".join(TEST_REQUIREMENTS).encode()
    ).hexdigest()
    if python.exists() and stamp.exists() and stamp.read_text() == want:
        return python
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([_interpreter(), "-m", "venv", str(VENV)], check=True)
    install = [str(python), "-m", "pip", "install", "-q", "-e", f"{ROOT}[gym]", *TEST_REQUIREMENTS]
    result = subprocess.run(install, capture_output=True, text=True)
    assert result.returncode == 0, f"installing into the {OLDEST} environment failed:\n{result.stderr[-3000:]}"
    stamp.write_text(want)
    return python


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_simulator_and_the_sdk_pass_their_tests_on_python_3_10() -> None:
    python = _venv_python()
    version = subprocess.run(
        [str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True
    )
    assert version.stdout.strip() == OLDEST
    # The venv's own install of the package, not whatever this process was pointed at.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    result = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "auto", "tests/sim", "tests/sdk"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, f"tests/sim and tests/sdk on Python {OLDEST}:\n{result.stdout[-5000:]}"
    assert " passed" in result.stdout.splitlines()[-1], result.stdout[-500:]
