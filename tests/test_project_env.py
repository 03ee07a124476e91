"""The suite runs in this checkout's own virtual environment (scripts/bootstrap makes .venv/), never the machine's.

Issue 16, item 15: with the package installed into the global Python, a second clone's `scripts/test` re-pointed the
`layersched` command and the editable install to that clone, and this one then tested the other's code.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import layersched.sdk
import layersched.server

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv"


def test_the_interpreter_is_this_checkouts_venv() -> None:
    assert Path(sys.prefix).resolve() == VENV.resolve(), (
        f"the tests run in {sys.prefix}, not in {VENV}: run them with scripts/test (or .venv/bin/python -m pytest)"
    )


def test_the_package_under_test_is_this_checkouts_code() -> None:
    for module in (layersched.sdk, layersched.server):
        assert Path(module.__file__ or "").resolve().is_relative_to(ROOT), module.__file__


def test_the_layersched_command_is_the_venvs() -> None:
    command = shutil.which("layersched")
    assert command is not None, "no layersched command on PATH"
    assert Path(command).parent.resolve() == (VENV / "bin").resolve(), command
