"""Smoke tests of the starter kit with a tiny budget: what `layersched init` copies must run, and a trained kit
must be a valid submission (policy.py loads its weights relative to __file__)."""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from layersched.sdk.cli import main

pytest.importorskip("torch")

TINY = ["--episodes", "2", "--tasks", "50", "--val-seeds", "1", "--eval-seeds", "1"]
REPO_README = Path(__file__).resolve().parents[3] / "README.md"


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


def load_policy(kit: Path) -> Any:
    """policy.py of ``kit`` imported from another working directory than the kit's, as the sandbox imports it."""
    spec = importlib.util.spec_from_file_location("kit_policy", kit / "policy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readmes_init_and_policy_agree_on_the_first_step(
    kit: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = (kit / "README.md").read_text()
    block = readme.split("## From zero to a ranked submission")[1].split("```bash\n")[1].split("```")[0]
    first = next(line.split("#")[0].strip() for line in block.splitlines() if line.startswith("python "))
    assert first == "python imitation_rl.py --seed 0"
    assert main(["init", str(tmp_path / "other")]) == 0
    assert f"\n  {first} " in capsys.readouterr().out  # init's hint names the same step
    assert f"train with `{first}`" in REPO_README.read_text()  # and so does README's
    weights = load_policy(kit).WEIGHTS_FILE
    assert weights == "weights_imitation.pt"
    assert f"`policy.py` loads `{weights}`" in readme
    assert f'"{weights}"' in (kit / first.split()[1]).read_text()  # the first step writes what policy.py loads


def test_train_reinforce_from_scratch_never_becomes_what_the_policy_loads_when_it_loses(kit: Path) -> None:
    out = run_script(kit, "train_reinforce.py", "--seed", "3", *TINY)
    assert "REINFORCE " in out and "Greedy " in out
    log = rows(kit / "train_seed3.csv")
    assert [r["episode"] for r in log] == ["0", "1"]
    assert all(float(r["mean_completion_s"]) > 0 for r in log)
    # Two episodes of policy gradient from random play lose to Greedy: kept for study, never loaded.
    assert "weights_reinforce.pt not written: no checkpoint beat Greedy on the validation workloads" in out
    assert (kit / "reinforce_seed3.pt").is_file()
    assert sorted(p.name for p in kit.glob("*.pt")) == ["reinforce_seed3.pt"]
    assert load_policy(kit).SCORER is None  # the template stays Greedy


def test_imitation_then_rl_never_writes_weights_worse_than_greedy(
    kit: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run_script(kit, "imitation_rl.py", "--bc-episodes", "1", "--bc-epochs", "3", *TINY)
    assert "agrees with Greedy on " in out and "Imitation+PG " in out
    assert [r["episode"] for r in rows(kit / "imitation_seed0.csv")] == ["-1", "0", "1"]
    assert "validation after episode   -1: " in out  # the clone is a candidate, so fine-tuning cannot lose it
    # One cloning episode of 50 tasks does not make a Greedy: the template stays what policy.py is.
    assert "weights_imitation.pt not written: no checkpoint beat Greedy on the validation workloads" in out
    assert sorted(p.name for p in kit.glob("*.pt")) == ["imitation_seed0.pt"]
    assert load_policy(kit).SCORER is None

    assert main(["validate", str(kit), "--episodes", "1"]) == 0
    assert f"{kit}: ready to submit\n" in capsys.readouterr().out


def test_the_scripts_do_not_overwrite_each_others_weights(kit: Path) -> None:
    import torch

    torch.manual_seed(0)
    make_scorer = load_policy(kit).make_scorer
    for name in ("weights_imitation.pt", "weights_reinforce.pt"):  # as an earlier run left them
        torch.save(make_scorer().state_dict(), kit / name)
    run_script(kit, "train_reinforce.py", *TINY)
    before = {p.name: p.read_bytes() for p in kit.glob("*.pt")}
    run_script(kit, "imitation_rl.py", "--bc-episodes", "1", "--bc-epochs", "3", *TINY)
    after = {p.name: p.read_bytes() for p in kit.glob("*.pt")}
    assert {name: after.get(name) for name in before} == before
    assert sorted(after) == ["imitation_seed0.pt", "reinforce_seed0.pt", "weights_imitation.pt", "weights_reinforce.pt"]


@pytest.fixture
def trainer(kit: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """train_reinforce.py of the kit, imported as the scripts import it (policy.py next to it)."""
    monkeypatch.syspath_prepend(str(kit))
    for name in ("policy", "train_reinforce"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import train_reinforce

    yield train_reinforce
    for name in ("policy", "train_reinforce"):
        sys.modules.pop(name, None)


def best_of_run(trainer: Any, ratio: float, earlier: float | None = None) -> tuple[Any, Any]:
    """The kit's KeepBest on tiny validation workloads holding an untrained network, said to have scored ``ratio``
    (and to score the weights file already there ``earlier``), and its env: publish()'s decision is pure logic on
    these (layersched.sim.training.publish, tests/sim/test_training.py)."""
    import torch

    torch.manual_seed(0)
    args = trainer.Args(tasks=30, val_seeds=1, val_every=1)
    env = trainer.make_env(args)
    best = trainer.keep_best(env, args)
    best.offer(trainer.make_scorer(), 0)
    best.score = ratio
    if earlier is not None:
        best.validate = lambda scorer: earlier
    return best, env


def test_publish_writes_the_loaded_file_only_below_greedy(
    kit: Path, trainer: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    trainer.publish_best(*best_of_run(trainer, 1.0), kit, "imitation_seed0.pt", "weights_imitation.pt")
    out = capsys.readouterr().out
    assert "weights_imitation.pt not written: no checkpoint beat Greedy on the validation workloads (best 1.0000)" in (
        out
    )
    assert (kit / "imitation_seed0.pt").is_file() and not (kit / "weights_imitation.pt").exists()

    trainer.publish_best(*best_of_run(trainer, 0.9), kit, "imitation_seed0.pt", "weights_imitation.pt")
    out = capsys.readouterr().out
    assert f"saved {kit / 'weights_imitation.pt'} (0.9000 x Greedy on validation)\n" in out
    assert "policy.py loads it: `layersched validate .` scores it on the public sample\n" in out
    assert load_policy(kit).SCORER is not None


def test_publish_keeps_better_weights_of_an_earlier_run(
    kit: Path, trainer: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    trainer.publish_best(*best_of_run(trainer, 0.85), kit, "imitation_seed0.pt", "weights_imitation.pt")
    earlier = (kit / "weights_imitation.pt").read_bytes()
    capsys.readouterr()

    trainer.publish_best(*best_of_run(trainer, 0.9, earlier=0.85), kit, "imitation_seed1.pt", "weights_imitation.pt")
    out = capsys.readouterr().out
    assert "weights_imitation.pt kept: the earlier one scores 0.8500 x Greedy, this run 0.9000\n" in out
    assert (kit / "weights_imitation.pt").read_bytes() == earlier

    trainer.publish_best(*best_of_run(trainer, 0.8, earlier=0.85), kit, "imitation_seed2.pt", "weights_imitation.pt")
    out = capsys.readouterr().out
    assert "weights_imitation.pt replaced: the earlier one scored 0.8500 x Greedy, this run 0.8000\n" in out
    assert f"saved {kit / 'weights_imitation.pt'} (0.8000 x Greedy on validation)\n" in out


def test_publish_says_when_policy_py_loads_another_file(
    kit: Path, trainer: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    trainer.publish_best(*best_of_run(trainer, 0.9), kit, "reinforce_seed0.pt", "weights_reinforce.pt")
    out = capsys.readouterr().out
    loaded = kit / "weights_imitation.pt"
    assert f'policy.py loads {loaded}, not this file: set WEIGHTS_FILE = "weights_reinforce.pt" in policy.py\n' in out
    assert load_policy(kit).SCORER is None


@pytest.mark.parametrize(
    ("script", "option", "message"),
    [
        ("train_reinforce.py", "--val-seeds", "--val-seeds must be at least 1 (got 0): checkpoints are chosen on them"),
        ("imitation_rl.py", "--val-every", "--val-every must be at least 1 (got 0)"),
    ],
    ids=["reinforce-val-seeds", "imitation-val-every"],
)
def test_validation_options_are_checked(kit: Path, script: str, option: str, message: str) -> None:
    result = subprocess.run(
        [sys.executable, script, *TINY, option, "0"], cwd=kit, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 1
    assert result.stderr == message + "\n"
    assert not list(kit.glob("*.pt"))


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
