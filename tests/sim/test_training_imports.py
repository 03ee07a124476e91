"""The kits' training scripts check their imports before anything slow (issue 29, item 5): where torch or gymnasium
cannot be imported, each script, as `layersched init --track` copies it, stops at once with one line naming what is
missing and the extras to install, instead of a traceback minutes into a run (gymnasium is first imported when a
script makes its env, after behaviour cloning)."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from layersched.sdk.cli import main
from layersched.sim.training_imports import INSTALL, missing_modules, require

REPO = Path(__file__).resolve().parents[2]

# A sitecustomize that makes the modules named by BLOCK_IMPORTS (comma-separated) fail to import as an uninstalled
# one does: the script's Python is the test's own, which has torch and gymnasium.
SHIM = """
import os, sys

BLOCKED = set(filter(None, os.environ.get("BLOCK_IMPORTS", "").split(",")))


class _Uninstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Uninstalled())
"""

# (track, script, arguments of a short run: what would run if the check let it, what each script needs)
SCRIPTS = {
    "layers-imitation_rl": ("layers-v1", "imitation_rl.py", ["--episodes", "2", "--tasks", "50"], ("torch",)),
    "layers-train_reinforce": ("layers-v1", "train_reinforce.py", ["--episodes", "2", "--tasks", "50"], ("torch",)),
    "jobs-train": ("jobs-v1", "train.py", ["--quick"], ("torch", "gymnasium")),
    "workflows-train": ("workflows-v1", "train.py", ["--quick"], ("torch", "gymnasium")),
}
CASES = [
    (script, blocked)
    for script, (_, _, _, needs) in SCRIPTS.items()
    for blocked in [(name,) for name in needs] + ([needs] if len(needs) > 1 else [])
]


def run_blocked(
    kit: Path, script: str, args: Sequence[str], blocked: Sequence[str], tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    shim = tmp_path / "shim"
    shim.mkdir(exist_ok=True)
    (shim / "sitecustomize.py").write_text(SHIM)
    env = dict(
        os.environ,
        BLOCK_IMPORTS=",".join(blocked),
        PYTHONPATH=os.pathsep.join(filter(None, [str(shim), os.environ.get("PYTHONPATH", "")])),
    )
    return subprocess.run(
        [sys.executable, script, *args], cwd=kit, env=env, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.mark.parametrize(("script", "blocked"), CASES, ids=[f"{s}-without-{'-'.join(b)}" for s, b in CASES])
def test_a_kits_training_stops_at_once_naming_the_missing_module_and_the_extras(
    script: str, blocked: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    track, name, args, needs = SCRIPTS[script]
    for other in set(needs) - set(blocked):  # present here, or the message would name it too (Python 3.10's venv)
        pytest.importorskip(other)
    kit = tmp_path / "kit"
    assert main(["init", str(kit), "--track", track]) == 0
    capsys.readouterr()
    before = sorted(p.name for p in kit.iterdir())

    result = run_blocked(kit, name, args, blocked, tmp_path)

    lacks = "; ".join(f"{module} (No module named {module!r})" for module in blocked)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr == (
        f"error: {name} trains with {' and '.join(needs)}, and this Python cannot import {lacks}: "
        'pip install "layersched[torch,gym]"\n'
    )
    assert result.stdout == ""  # nothing started: no phase, no episode
    assert sorted(p.name for p in kit.iterdir()) == before  # no log, checkpoint or weights


def test_the_shim_blocks_only_what_it_is_told(tmp_path: Path) -> None:
    """The test's own means: with nothing blocked, the same script gets past its check (and fails on a bad option,
    which argparse reports after every import)."""
    pytest.importorskip("torch")
    pytest.importorskip("gymnasium")
    kit = tmp_path / "kit"
    assert main(["init", str(kit), "--track", "jobs-v1"]) == 0
    result = run_blocked(kit, "train.py", ["--no-such-option"], (), tmp_path)
    assert result.returncode == 2
    assert "unrecognized arguments: --no-such-option" in result.stderr
    assert "cannot import" not in result.stderr


class _FailingImport(importlib.abc.MetaPathFinder):
    """Makes ``name`` fail to import with ``error``: a unit test's stand-in for a broken installation."""

    def __init__(self, name: str, error: Exception) -> None:
        self.name, self.error = name, error

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec:
        if fullname == self.name:
            raise self.error
        return None  # type: ignore[return-value]


def test_a_broken_install_is_named_by_the_first_line_of_its_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A torch whose native library does not load raises OSError, not ImportError; a long message stays one line."""
    error = OSError("libtorch_cpu.so: cannot open shared object file: No such file or directory\n  File ...")
    monkeypatch.setattr(sys, "meta_path", [_FailingImport("fake_torch", error), *sys.meta_path])
    monkeypatch.setattr(sys, "argv", ["/home/student/kit/train.py", "--seed", "0"])
    with pytest.raises(SystemExit) as exc:
        require("json", "fake_torch")
    assert exc.value.code == (
        "error: train.py trains with json and fake_torch, and this Python cannot import fake_torch "
        f"(libtorch_cpu.so: cannot open shared object file: No such file or directory): {INSTALL}"
    )
    long = ImportError("x" * 1000)
    monkeypatch.setattr(sys, "meta_path", [_FailingImport("fake_gym", long), *sys.meta_path])
    assert missing_modules(("fake_gym",)) == [("fake_gym", "x" * 200)]


def test_require_returns_quietly_when_everything_imports() -> None:
    require("json", "numpy")
    assert missing_modules(("json", "numpy")) == []


def test_every_kit_readme_and_the_main_readme_install_the_same_extras() -> None:
    """The extras the check names are those every kit's README and the main README tell students to install."""
    assert INSTALL == 'pip install "layersched[torch,gym]"'
    students = (REPO / "README.md").read_text().split("## For students")[1].split("\n## ")[0]
    kits = {path.parent.parent.name: path.read_text() for path in (REPO / "sim" / "tracks").glob("*/starter/README.md")}
    assert sorted(kits) == ["jobs_v1", "layers_v1", "workflows_v1"]
    for name, text in {"README.md": students, **kits}.items():
        installs = [line.split("#")[0].rstrip() for line in text.splitlines() if line.startswith("pip install")]
        assert installs == [INSTALL], (name, installs)
