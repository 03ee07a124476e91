"""Smoke tests of the starter kit with a tiny budget: what `layersched init` copies must run, and a trained kit
must be a valid submission (policy.py loads its weights relative to __file__)."""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from layersched.sdk.cli import main

pytest.importorskip("torch")

TINY = ["--episodes", "2", "--tasks", "50", "--eval-seeds", "1"]


def run_script(kit: Path, *args: str) -> str:
    result = subprocess.run([sys.executable, *args], cwd=kit, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout


@pytest.fixture
def kit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    target = tmp_path / "kit"
    assert main(["init", str(target)]) == 0
    capsys.readouterr()
    return target


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_the_template_works_without_weights(kit: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(kit), "--episodes", "1"]) == 0
    out = capsys.readouterr().out
    assert f"{kit}: ready to submit\n" in out


def test_train_reinforce_then_submit_ready(kit: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = run_script(kit, "train_reinforce.py", "--seed", "3", *TINY)
    assert "REINFORCE " in out and "Greedy " in out
    log = rows(kit / "train_seed3.csv")
    assert [r["episode"] for r in log] == ["0", "1"]
    assert all(float(r["mean_completion_s"]) > 0 for r in log)
    assert (kit / "policy_seed3.pt").is_file() and (kit / "policy_weights.pt").is_file()

    assert main(["validate", str(kit), "--episodes", "1"]) == 0
    out = capsys.readouterr().out
    assert "->your policy " in out and f"{kit}: ready to submit\n" in out


def test_the_trained_policy_loads_its_weights_relative_to_its_file(kit: Path, tmp_path: Path) -> None:
    run_script(kit, "train_reinforce.py", *TINY)
    spec = importlib.util.spec_from_file_location("kit_policy", kit / "policy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # imported from another working directory than the kit's
    assert module.SCORER is not None


def test_imitation_then_rl(kit: Path) -> None:
    out = run_script(kit, "imitation_rl.py", "--bc-episodes", "1", "--bc-epochs", "1", *TINY)
    assert "agrees with Greedy on " in out and "Imitation+PG " in out
    assert [r["episode"] for r in rows(kit / "imitation_seed0.csv")] == ["-1", "0", "1"]
    assert (kit / "policy_weights.pt").is_file()


def test_plot_curves_over_seeds(kit: Path) -> None:
    for seed in ("0", "1"):
        run_script(kit, "train_reinforce.py", "--seed", seed, "--episodes", "3", "--tasks", "30", "--eval-seeds", "0")
    out = run_script(kit, "plot_curves.py", "--smooth", "2")
    if importlib.util.find_spec("matplotlib") is None:
        assert out == (
            "matplotlib is not installed, so no figure: wrote train_curve_summary.csv instead "
            "(pip install matplotlib for the plot)\n"
        )
        summary = rows(kit / "train_curve_summary.csv")
        assert [(r["group"], r["episode"], r["seeds"]) for r in summary] == [
            ("REINFORCE", "1", "2"),
            ("REINFORCE", "2", "2"),
        ]
        assert all(float(r["min"]) <= float(r["mean"]) <= float(r["max"]) for r in summary)
    else:
        assert (kit / "train_curve.png").is_file()


def test_scripts_explain_every_option(kit: Path) -> None:
    for script, option in (
        ("train_reinforce.py", "--gamma GAMMA discount factor of the returns (default 0.95)"),
        ("imitation_rl.py", "--expert EXPERT the baseline to imitate"),
    ):
        text = " ".join(run_script(kit, script, "--help").split())  # argparse wraps lines
        assert option in text, text
        assert "--torch-deterministic" in text
