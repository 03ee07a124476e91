"""The lab's modules at their old import paths (``layersched.sim.env``, ...): what students' policies and the lab's
scripts import keeps working, as the very objects of ``layersched.sim.tracks.layers_v1``, and nothing of ours uses
those paths (issue 31)."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
NEW = "layersched.sim.tracks.layers_v1"
# Each old path -> the module that holds the code now.
OLD_PATHS = {
    "layersched.sim.env": f"{NEW}.env",
    "layersched.sim.workload": f"{NEW}.workload",
    "layersched.sim.catalog": f"{NEW}.catalog",
    "layersched.sim.scenario": f"{NEW}.scenario",
    "layersched.sim.view": f"{NEW}.view",
    "layersched.sim.baselines": f"{NEW}.baselines",
    "layersched.sim.reference_baselines": f"{NEW}.reference_baselines",
    "layersched.sim.replay": f"{NEW}.replay",
    "layersched.sim.episode": f"{NEW}.episode",
    "layersched.sim.gym_env": f"{NEW}.gym_env",
    "layersched.sim.lab_table": f"{NEW}.table",
}
# What the lab's own files and a student's policy import (the lab text, the README's contract, the old kit).
USED_BY_STUDENTS = {
    "layersched.sim.env": ["ClusterEnv", "Node", "Scenario", "Task"],
    "layersched.sim.scenario": ["Scenario", "CloudNode", "NodeRanges"],
    "layersched.sim.catalog": ["load_catalog", "Catalog"],
    "layersched.sim.baselines": ["BASELINES", "get_baseline", "greedy_estimate"],
    "layersched.sim.episode": ["run_episode", "run_lab_baseline", "EpisodeResult"],
    "layersched.sim.workload": ["Task", "NodeSpec", "draw_episode"],
}
IDS = [old.rsplit(".", 1)[1] for old in OLD_PATHS]


@pytest.mark.parametrize(("old", "new"), OLD_PATHS.items(), ids=IDS)
def test_an_old_path_gives_the_same_objects_as_the_new_one(old: str, new: str) -> None:
    if old == "layersched.sim.gym_env":
        pytest.importorskip("gymnasium")
    old_module, new_module = importlib.import_module(old), importlib.import_module(new)
    exported: list[str] = old_module.__all__
    different = [name for name in exported if getattr(old_module, name) is not getattr(new_module, name)]
    assert different == []
    # Every class and function of the module is there, and the old module holds nothing but its re-exports.
    defined = {
        name
        for name, value in vars(new_module).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == new
    }
    assert defined - set(exported) == set()
    own = {name for name in vars(old_module) if not name.startswith("__")}
    assert own - set(exported) <= {"annotations"}


@pytest.mark.parametrize(("old", "names"), USED_BY_STUDENTS.items(), ids=list(USED_BY_STUDENTS))
def test_what_students_import_is_there(old: str, names: list[str]) -> None:
    module = importlib.import_module(old)
    assert [name for name in names if name not in module.__all__] == []


def _python_files() -> Iterator[Path]:
    for folder in ("sim", "sdk", "server", "worker", "tests", "benchmarks"):
        yield from sorted((REPO / folder).rglob("*.py"))


def _uses_of_old_paths(path: Path) -> list[str]:
    """Each import of an old path in ``path`` (``import``, ``from ... import``, ``from layersched.sim import env``)
    and each string naming one (``importlib.import_module("layersched.sim.env")``, a monkeypatch target)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    short = {old.rsplit(".", 1)[1] for old in OLD_PATHS}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name in OLD_PATHS]
        elif isinstance(node, ast.ImportFrom) and node.module in OLD_PATHS:
            found.append(node.module)
        elif isinstance(node, ast.ImportFrom) and node.module == "layersched.sim":
            found += [f"layersched.sim.{a.name}" for a in node.names if a.name in short]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += [old for old in OLD_PATHS if node.value == old or node.value.startswith(old + ".")]
    return found


def test_nothing_of_ours_imports_through_an_old_path() -> None:
    shims = {REPO / "sim" / f"{old.rsplit('.', 1)[1]}.py" for old in OLD_PATHS}
    assert all(path.is_file() for path in shims)
    uses = {
        str(path.relative_to(REPO)): found
        for path in _python_files()
        if path not in shims and path != Path(__file__).resolve() and (found := _uses_of_old_paths(path))
    }
    assert uses == {}


def test_the_scan_sees_every_form_of_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import layersched.sim.env\n"
        "from layersched.sim.baselines import BASELINES\n"
        "from layersched.sim import catalog, evalset\n"
        "def f(monkeypatch):\n"
        "    monkeypatch.setattr('layersched.sim.view.TrueView', None)\n"
        "from layersched.sim.episodes import policy_seed\n"  # a shared module whose name starts like an old one
    )
    assert _uses_of_old_paths(module) == [
        "layersched.sim.env",
        "layersched.sim.baselines",
        "layersched.sim.catalog",
        "layersched.sim.view",
    ]
