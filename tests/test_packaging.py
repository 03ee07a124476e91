"""What an install of the package holds (issue 31): every module of the four packages, and each track's folder as it
is in the repository (its starter kit, its data, its C sources), so that adding a track is adding its folder and its
line in pyproject.toml's package list, which this test names when it is missing."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sim", "sdk", "server", "worker")  # pyproject.toml's package-dir: layersched.<folder>


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """setuptools' own copy of the packages with their package data, as a ``pip install`` of a fresh clone gets
    them: built from a copy of the sources alone, since the editable install's ``layersched.egg-info`` lists every
    file and would let setuptools ship what pyproject.toml forgot."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in PACKAGES:
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    out = tmp_path_factory.mktemp("build")
    command = [sys.executable, "-c", "from setuptools import setup; setup()", "build_py", "--build-lib", str(out)]
    subprocess.run(command, cwd=source, check=True, capture_output=True)
    return out / "layersched"


def _tracked(paths: list[Path]) -> set[str]:
    return {str(p.relative_to(ROOT)) for p in paths if "__pycache__" not in p.parts and p.is_file()}


def test_every_module_of_the_packages_ships(built: Path) -> None:
    modules = _tracked([p for folder in PACKAGES for p in (ROOT / folder).rglob("*.py")])
    shipped = {str(p.relative_to(built)) for p in built.rglob("*.py")}
    assert "sim/tracks/layers_v1/env.py" in modules
    assert sorted(modules - shipped) == []  # a package folder missing from pyproject.toml's packages shows here


def test_every_tracks_folder_ships_its_kit_data_and_c_sources(built: Path) -> None:
    folders = sorted(p.parent for p in ROOT.glob("sim/tracks/*/__init__.py"))
    assert [f.name for f in folders] == ["jobs_v1", "layers_v1", "workflows_v1"]
    for folder in folders:
        wanted = _tracked(
            [*folder.glob("starter/*"), *folder.glob("data/*"), *folder.glob("*.c"), *folder.glob("*.pyi")]
        )
        assert wanted, folder
        for name in sorted(wanted):
            copy = built / name
            assert copy.is_file() and copy.read_bytes() == (ROOT / name).read_bytes(), name
    assert (built / "sim" / "tracks" / "layers_v1" / "_observe.c").is_file()
    assert (built / "sim" / "tracks" / "layers_v1" / "data" / "lab_seed0.json").is_file()
    assert (built / "sim" / "tracks" / "layers_v1" / "starter" / "policy.py").is_file()
