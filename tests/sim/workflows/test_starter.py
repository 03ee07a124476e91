"""The workflows-v1 starter kit (seed 004's GCN, cloned from HEFT, then REINFORCE) with its quick budget: what
`layersched init --track workflows-v1` copies must train end to end, and give policy.py weights it loads and plays
validly, in the worker's sandbox harness too."""

from __future__ import annotations

import random
import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from layersched.sdk.checks import check_policy
from layersched.sdk.cli import main
from layersched.sim.tracks import get_track
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario

pytest.importorskip("torch")
pytest.importorskip("gymnasium")

TRACK = get_track("workflows-v1")


def load_policy(kit: Path) -> dict[str, Any]:
    """The globals of ``kit``'s policy.py, run from another working directory than the kit's (as the sandbox runs
    it: the weights are found relative to ``__file__``)."""
    return runpy.run_path(str(kit / "policy.py"), run_name="flows_kit_policy")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A kit made by `layersched init --track workflows-v1`, after `python train.py --quick` (once for the module)."""
    kit = tmp_path_factory.mktemp("flows") / "kit"
    assert main(["init", "--track", "workflows-v1", str(kit)]) == 0
    result = subprocess.run(
        # From another working directory: the weights go next to policy.py all the same.
        [sys.executable, str(kit / "train.py"), "--quick"],
        cwd=kit.parent,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return kit, result.stdout


def test_init_copies_the_recipe(trained: tuple[Path, str]) -> None:
    kit, _ = trained
    assert {"README.md", "policy.py", "train.py"} <= {p.name for p in kit.iterdir()}


def test_quick_training_runs_both_phases_and_logs_each_iteration(trained: tuple[Path, str]) -> None:
    kit, out = trained
    assert "phase 1: behaviour cloning of HEFT, 1 episodes of each of mixed,ml-at-once\n" in out
    assert "phase 2: REINFORCE for 2 iterations of 1 x 2 episodes\n" in out
    assert "validation: start-now EFT (policy.py without weights) scores " in out
    assert "validation after iteration   -1: " in out  # the clone is a candidate, so fine-tuning cannot lose it
    log = (kit / "train_seed0.csv").read_text().splitlines()
    assert log[0] == "iteration,mean_return,validation_score"
    assert [row.split(",")[0] for row in log[1:]] == ["0", "1"]
    assert all(float(row.split(",")[1]) < 0 for row in log[1:])  # minus the total completion time / 1000


def test_a_run_that_loses_to_the_fallback_leaves_the_template_as_it_was(trained: tuple[Path, str]) -> None:
    kit, out = trained
    assert "weights.pt not written: no checkpoint beat start-now EFT on the validation workloads" in out
    assert sorted(p.name for p in kit.glob("*.pt")) == ["flows_seed0.pt"]
    assert load_policy(kit)["LOADED"] is None


def test_the_same_seed_gives_the_same_checkpoint(trained: tuple[Path, str], tmp_path: Path) -> None:
    kit, _ = trained
    result = subprocess.run(
        [sys.executable, str(kit / "train.py"), "--quick", "--out-dir", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "train_seed0.csv").read_bytes() == (kit / "train_seed0.csv").read_bytes()
    assert (tmp_path / "flows_seed0.pt").read_bytes() == (kit / "flows_seed0.pt").read_bytes()


@pytest.fixture
def submission(trained: tuple[Path, str], tmp_path: Path) -> Path:
    """policy.py with the quick run's checkpoint as weights.pt: what a run that beats the fallback writes."""
    kit, _ = trained
    target = tmp_path / "submission"
    target.mkdir()
    shutil.copy(kit / "policy.py", target)
    shutil.copy(kit / "flows_seed0.pt", target / "weights.pt")
    return target


def test_the_trained_weights_load_and_play_valid_actions(submission: Path) -> None:
    kit_policy = load_policy(submission)
    assert kit_policy["LOADED"] is not None
    check_policy(kit_policy["policy"], WorkflowScenario(), track="workflows-v1")
    run = TRACK.run_episode(WorkflowScenario(n_workflows=2), kit_policy["policy"], random.Random(0), random.Random(0))
    assert run.metrics.mean_completion > 0


def test_the_trained_kit_runs_in_the_sandbox_harness(submission: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(submission), "--evalset", "workflows-sample", "--episodes", "1"]) == 0
    out = capsys.readouterr().out
    assert "run in the worker's sandbox harness (process backend)" in out
    assert "->your policy" in out


def test_unreadable_weights_fall_back_to_the_heuristic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--track", "workflows-v1", str(tmp_path / "kit")]) == 0
    (tmp_path / "kit" / "weights.pt").write_bytes(b"not a checkpoint")
    capsys.readouterr()
    kit_policy = load_policy(tmp_path / "kit")
    assert kit_policy["LOADED"] is None
    assert "weights.pt not used (" in capsys.readouterr().err
    check_policy(kit_policy["policy"], WorkflowScenario(), track="workflows-v1")


def test_the_template_without_weights_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--track", "workflows-v1", str(tmp_path / "kit")]) == 0
    capsys.readouterr()
    assert main(["validate", str(tmp_path / "kit"), "--evalset", "workflows-sample", "--episodes", "1"]) == 0
    out = capsys.readouterr().out
    assert f"{tmp_path / 'kit'}: ready to submit\n" in out or "->your policy" in out
