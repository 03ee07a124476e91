"""Fixtures shared by every test package."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SANDBOX_DIR = Path(__file__).resolve().parents[1] / "worker" / "sandbox"


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    """Start the Docker engine and (re)build the sandbox image if its inputs changed; returns the image tag.

    The image holds layersched.sim, so any change to the simulator's code needs a rebuild (the worker refuses an
    image whose scenario hashes differ from its own). About a minute the first time, a second after. Tests that
    need it are only skipped with LAYERSCHED_SKIP_DOCKER=1; without an engine they fail.
    """
    if os.environ.get("LAYERSCHED_SKIP_DOCKER") == "1":
        pytest.skip("LAYERSCHED_SKIP_DOCKER=1")
    subprocess.run([str(SANDBOX_DIR / "start_dockerd.sh")], check=True, capture_output=True)
    built = subprocess.run([str(SANDBOX_DIR / "build_image.sh")], check=True, capture_output=True, text=True)
    return built.stdout.strip().splitlines()[-1]
