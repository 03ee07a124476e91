"""What the three starter kits' training scripts share (layersched.sim.training): the command line, the returns and
the time-dependent baseline, and the rule that only weights beating the template become what policy.py loads. The
kits' smoke tests (tests/sim/layers/test_starter.py, tests/sim/test_jobs_starter.py,
tests/sim/workflows/test_starter.py) run it end to end."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from layersched.sim.training import (  # noqa: E402 (it needs torch)
    VALIDATION_SEED,
    KeepBest,
    discounted_returns,
    parse_args,
    publish,
    reinforce_iterations,
    scaled_advantages,
    time_dependent_advantages,
    validation_seeds,
)


@dataclass
class Args:
    seed: int = 0
    """seed of the generators"""
    rate: float = 0.3
    """arrival rate"""
    rates: str = "0.3,0.7"
    """the rates, comma-separated"""
    deterministic: bool = True
    """deterministic kernels"""
    quick: bool = False
    """a budget of seconds"""


def test_args_come_from_the_dataclass_with_each_fields_docstring_as_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_args(Args, "d", ["--rate", "0.5", "--no-deterministic"]) == Args(rate=0.5, deterministic=False)
    with pytest.raises(SystemExit):
        parse_args(Args, "the description", ["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "the description" in text
    assert "--rate RATE arrival rate (default 0.3)" in text
    assert "--deterministic, --no-deterministic deterministic kernels" in text


def test_quick_replaces_the_budget_only_when_asked() -> None:
    quick = {"rates": "0.3", "seed": 7}
    assert parse_args(Args, None, ["--rate", "0.5"], quick=quick) == Args(rate=0.5)
    assert parse_args(Args, None, ["--quick", "--rate", "0.5"], quick=quick) == Args(
        rate=0.5, rates="0.3", seed=7, quick=True
    )


def test_a_bad_value_is_refused_by_its_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        parse_args(Args, None, ["--rate", "fast"])
    assert info.value.code == 2
    assert "argument --rate: invalid float value: 'fast'" in capsys.readouterr().err


def test_returns_are_discounted_from_the_last_step_back() -> None:
    assert discounted_returns([1.0, 0.0, 2.0], 0.5).tolist() == [1.5, 1.0, 2.0]
    assert discounted_returns([], 0.9).tolist() == []


def test_the_time_dependent_baseline_counts_an_ended_episode_as_zero() -> None:
    # Returns (gamma 1): [3, 2] and [1]; the baseline is [(3 + 1) / 2, (2 + 0) / 2] = [2, 1].
    first, second = time_dependent_advantages([[1.0, 2.0], [1.0]], 1.0)
    assert first.tolist() == [1.0, 1.0]
    assert second.tolist() == [-1.0]


def test_a_batchs_advantages_are_scaled_to_unit_spread() -> None:
    adv = scaled_advantages([np.array([1.0, -1.0]), np.array([3.0])])
    assert adv.dtype == torch.float32
    assert float(adv.std()) == pytest.approx(1.0, abs=1e-6)
    assert adv.tolist() == pytest.approx([1.0 / 2.0, -1.0 / 2.0, 3.0 / 2.0], rel=1e-6)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: validation_seeds(0), "--val-seeds must be at least 1 (got 0): checkpoints are chosen on them"),
        (
            lambda: KeepBest(lambda network: 1.0, reference="R", unit="episode", every=0),
            "--val-every must be at least 1 (got 0)",
        ),
    ],
    ids=["val-seeds", "val-every"],
)
def test_validation_options_are_checked(make: Any, message: str) -> None:
    with pytest.raises(SystemExit) as info:
        make()
    assert str(info.value) == message


def test_validation_seeds_are_apart_from_training_seeds() -> None:
    assert validation_seeds(3) == range(VALIDATION_SEED, VALIDATION_SEED + 3)
    assert VALIDATION_SEED == 3000  # the kits train on 1000+, clone on 2000+ and test on 0+


def network(value: float) -> Any:
    net = torch.nn.Linear(1, 1)
    with torch.no_grad():
        net.weight.fill_(value)
    return net


def test_the_best_checkpoint_is_kept_as_a_copy(capsys: pytest.CaptureFixture[str]) -> None:
    scores = iter([1.2, 0.9, 1.0])
    best = KeepBest(lambda net: next(scores), reference="SJF", unit="iteration", every=2)
    assert [best.due(step, 5) for step in range(5)] == [False, True, False, True, True]
    net = network(1.0)
    best.offer(net, -1)
    best.offer(net, 1)
    with torch.no_grad():
        net.weight.fill_(5.0)  # training goes on: the kept copy must not follow
    best.offer(net, 3)
    assert (best.score, best.step) == (0.9, 1)
    assert best.state["weight"].tolist() == [[1.0]]
    assert capsys.readouterr().out.splitlines() == [
        "validation after iteration   -1: 1.2000 x SJF  (best so far)",
        "validation after iteration    1: 0.9000 x SJF  (best so far)",
        "validation after iteration    3: 1.0000 x SJF",
    ]


def publish_run(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    score: float,
    *,
    earlier: float | None = None,
    template_score: float = 1.0,
    target: str = "w.pt",
    loads: str = "w.pt",
) -> tuple[bool, list[str], dict[str, float]]:
    """Publish a run that scored ``score`` to ``target`` (where an earlier file scoring ``earlier`` may be), with
    ``loads`` what policy.py loads; returns whether ``target`` was written, the lines printed (``tmp_path`` as T) and
    every checkpoint there, by path, with the score it was saved with."""
    best = KeepBest(lambda net: float(net["score"]), reference="HEFT", unit="iteration", every=1)
    best.state, best.score, best.step = {"score": torch.tensor(score)}, score, 4
    if earlier is not None:
        (tmp_path / target).parent.mkdir(parents=True, exist_ok=True)
        torch.save({"score": torch.tensor(earlier)}, tmp_path / target)

    def load(path: Path) -> Any:
        return torch.load(path, weights_only=True) if path.exists() else None

    wrote = publish(
        best,
        run_file=tmp_path / "run.pt",
        target=tmp_path / target,
        save=lambda state, path: torch.save(state, path),
        load=load,
        loads=tmp_path / loads,
        template="EFT",
        template_score=template_score,
        validate_command="layersched validate . --evalset x",
    )
    files = {
        str(p.relative_to(tmp_path)): round(float(torch.load(p, weights_only=True)["score"]), 4)
        for p in sorted(tmp_path.rglob("*.pt"))
    }
    return wrote, capsys.readouterr().out.replace(str(tmp_path), "T").splitlines(), files


def test_a_run_that_does_not_beat_the_template_writes_only_its_own_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrote, lines, files = publish_run(tmp_path, capsys, 0.96, template_score=0.95)
    assert not wrote
    assert lines == [
        "saved T/run.pt: this run's best checkpoint (iteration 4, 0.9600 x HEFT)",
        "w.pt not written: no checkpoint beat EFT on the validation workloads (best 0.9600 x HEFT, EFT 0.9500), and "
        "the template without weights is EFT",
    ]
    assert files == {"run.pt": 0.96}


def test_against_the_reference_itself_the_best_score_is_said_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrote, lines, _ = publish_run(tmp_path, capsys, 1.0)
    assert not wrote
    assert lines[1] == (
        "w.pt not written: no checkpoint beat EFT on the validation workloads (best 1.0000), and the template without "
        "weights is EFT"
    )


def test_a_run_that_beats_the_template_and_no_earlier_file_is_what_policy_py_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrote, lines, files = publish_run(tmp_path, capsys, 0.9, template_score=0.95)
    assert wrote
    assert lines[1:] == [
        "saved T/w.pt (0.9000 x HEFT on validation)",
        "policy.py loads it: `layersched validate . --evalset x` scores it on the public sample",
    ]
    assert files == {"run.pt": 0.9, "w.pt": 0.9}


@pytest.mark.parametrize(
    ("score", "earlier", "line", "replaced"),
    [
        # Scores exact in float32, as the checkpoint stores them.
        (0.875, 0.75, "w.pt kept: the earlier one scores 0.7500 x HEFT, this run 0.8750", False),
        (0.75, 0.75, "w.pt kept: the earlier one scores 0.7500 x HEFT, this run 0.7500", False),
        (0.625, 0.75, "w.pt replaced: the earlier one scored 0.7500 x HEFT, this run 0.6250", True),
    ],
    ids=["worse", "equal", "better"],
)
def test_an_earlier_file_is_replaced_only_by_a_better_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], score: float, earlier: float, line: str, replaced: bool
) -> None:
    wrote, lines, files = publish_run(tmp_path, capsys, score, earlier=earlier)
    assert wrote == replaced
    assert lines[1] == line
    assert files == {"run.pt": score, "w.pt": score if replaced else earlier}


@pytest.mark.parametrize(
    ("target", "loads", "line"),
    [
        ("out/w.pt", "w.pt", "policy.py loads T/w.pt: copy w.pt next to it to submit these weights"),
        ("w.pt", "other.pt", 'policy.py loads T/other.pt, not this file: set WEIGHTS_FILE = "w.pt" in policy.py'),
    ],
    ids=["another-folder", "another-file"],
)
def test_it_says_what_policy_py_loads_when_it_is_not_this_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str, loads: str, line: str
) -> None:
    (tmp_path / "out").mkdir()
    wrote, lines, files = publish_run(tmp_path, capsys, 0.9, target=target, loads=loads)
    assert wrote
    assert lines[-1] == line
    assert files == {"run.pt": 0.9, target: 0.9}


@dataclass
class Played:
    seed: int
    rewards: list[float]


def test_reinforce_iterations_take_each_workload_in_turn_and_log_each_iteration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sampled: list[tuple[str, int]] = []
    steps: list[list[tuple[int, list[float]]]] = []

    def sample(env: str, seed: int) -> Played:
        sampled.append((env, seed))
        return Played(seed, [-1.0] * (1 + len(sampled) % 2))  # episodes of one workload end at different steps

    def step(batch: list[tuple[Played, Any]]) -> None:
        steps.append([(episode.seed, advantages.tolist()) for episode, advantages in batch])

    scores = iter([0.9, 0.8])
    best = KeepBest(lambda net: next(scores), reference="SJF", unit="iteration", every=2)
    reinforce_iterations(
        network(1.0),
        best,
        envs=["a", "b", "c"],
        sample=sample,
        step=step,
        iterations=3,
        workloads=2,
        per_workload=2,
        first_seed=1000,
        gamma=1.0,
        log=tmp_path / "log.csv",
        started=0.0,
    )
    # Workload k of the run has seed 1000 + k and the env k mod 3.
    assert sampled == [(env, 1000 + k) for k, env in enumerate("abcabc") for _ in range(2)]
    # Within a workload, returns [-2, -1] and [-1]: the baseline is [-1.5, -0.5].
    assert steps[0] == [(1000, [-0.5, -0.5]), (1000, [0.5]), (1001, [-0.5, -0.5]), (1001, [0.5])]
    assert len(steps) == 3
    assert (tmp_path / "log.csv").read_text().splitlines() == [
        "iteration,mean_return,validation_score",
        "0,-1.500,",
        "1,-1.500,0.9000",
        "2,-1.500,0.8000",
    ]
    assert [line.split("  (")[0] for line in capsys.readouterr().out.splitlines() if line.startswith("iteration")] == [
        "iteration    0  mean return    -1.50",
        "iteration    1  mean return    -1.50",
        "iteration    2  mean return    -1.50",
    ]
