"""``python -m layersched.sim --track jobs-v1`` (issue 19): the baselines' table, pinned at three rates, its JSON,
the dumped jobs, and the lab's table untouched by the dispatch."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from layersched.sim.cli import main
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario
from layersched.sim.tracks.jobs_v1.workload import draw_jobs
from tests.sim import deeprm_transcription as ref
from tests.sim.table_imports import modules_a_table_imports

# python -m layersched.sim --track jobs-v1 --rate R (seeds 0-4, simu_len 50), as of the commit that added it.
PINNED = {
    "0.3": (
        "jobs-v1  rate=0.3 (load 55%) simu_len=50 seeds=[0, 1, 2, 3, 4]",
        {"SJF": (1.579, 4.555), "Packer": (1.617, 4.643), "Tetris*": (1.579, 4.555), "Random": (2.458, 5.826)},
    ),
    "0.7": (
        "jobs-v1  rate=0.7 (load 129%) simu_len=50 seeds=[0, 1, 2, 3, 4]",
        {"SJF": (4.952, 15.431), "Packer": (10.071, 22.681), "Tetris*": (4.412, 14.898), "Random": (6.929, 19.129)},
    ),
    "1.0": (
        "jobs-v1  rate=1.0 (load 184%) simu_len=50 seeds=[0, 1, 2, 3, 4]",
        {"SJF": (9.070, 25.660), "Packer": (21.603, 44.432), "Tetris*": (7.067, 23.636), "Random": (8.760, 25.848)},
    ),
}


@pytest.mark.parametrize("rate", list(PINNED))
def test_the_table_is_pinned(rate: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--track", "jobs-v1", "--rate", rate]) == 0
    header, rows = PINNED[rate]
    expected = [header, f"{'':10s} {'slowdown':>9s} {'completion':>11s}"] + [
        f"{name:10s} {slowdown:9.3f} {completion:11.3f}" for name, (slowdown, completion) in rows.items()
    ]
    assert capsys.readouterr().out.splitlines() == expected


def test_the_json_has_each_baselines_means_and_per_seed_slowdowns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--track=jobs-v1", "--rate", "0.7", "--seeds", "0-4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out) == ["baselines"] and list(out["baselines"]) == ["SJF", "Packer", "Tetris*", "Random"]
    for name, row in out["baselines"].items():
        assert set(row) == {"mean_slowdown", "mean_completion", "per_seed"}
        assert len(row["per_seed"]) == 5
        assert row["mean_slowdown"] == pytest.approx(sum(row["per_seed"]) / 5)
        assert (round(row["mean_slowdown"], 3), round(row["mean_completion"], 3)) == PINNED["0.7"][1][name]


def test_the_dumped_jobs_are_the_references_sequences(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "jobs.json"
    assert main(["--track", "jobs-v1", "--rate", "0.5", "--seeds", "3,42", "--dump-jobs", str(path)]) == 0
    dumped = json.loads(path.read_text(encoding="utf-8"))
    assert len(dumped) == 2
    pa = ref.Parameters()
    pa.simu_len, pa.num_nw, pa.new_job_rate = 50, 10, 0.5
    pa.compute_dependent_parameters()
    for seed, jobs in zip((3, 42), dumped, strict=True):
        lens, sizes = ref.generate_sequence_work(pa, seed=seed)
        assert jobs == [
            {"arrival_step": t, "len": int(lens[0, t]), "res": [int(v) for v in sizes[0, t]]}
            for t in range(50)
            if lens[0, t]
        ]
    assert len(dumped[0]) == len(draw_jobs(JobsScenario(new_job_rate=0.5), np.random.RandomState(3)))


def test_a_bad_rate_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--track", "jobs-v1", "--rate", "1.5"])
    assert info.value.code == 2
    assert "error: new_job_rate must be in (0, 1], got 1.5" in capsys.readouterr().err


def test_an_unknown_track_has_no_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--track", "nope-v1"]) == 2
    assert capsys.readouterr().err.startswith("error: track 'nope-v1' has no baseline table: unknown track 'nope-v1'")


def test_naming_the_lab_track_prints_the_labs_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--baselines", "Greedy", "--seeds", "0-1"]) == 0
    lab = capsys.readouterr().out
    assert main(["--track", "layers-v1", "--baselines", "Greedy", "--seeds", "0-1"]) == 0
    assert capsys.readouterr().out == lab


def test_the_table_imports_neither_numpy_nor_the_labs_simulator() -> None:
    # Half of its process was importing them (issue 19's benchmark): the baselines need neither.
    modules = ["numpy", "layersched.sim.tracks.layers_v1.env", "layersched.sim.tracks.layers_v1.table"]
    assert modules_a_table_imports(["--track", "jobs-v1", "--seeds", "0-1"], modules) == []
