"""The baseline table of workflows-v1 (``python -m layersched.sim --track workflows-v1``), pinned.

The pinned figures are what the command printed when the rules were written (a regression pin: any change of the
rules, the families or the baselines moves them, and must then be a new track version or a deliberate re-pin).
Re-pinned once before the track was first published: the workload's numpy generator takes 256 bits of the episode's
generator instead of 64 (a keyed episode keeps at least 128 bits of its key; tests/redteam/test_track_attacks.py).
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from layersched.sim.cli import main

# Per seed 0-4, the mean workflow completion time (s) of each baseline on the default scenario.
PINNED = {
    "FCFS": [1775.033, 2028.797, 2316.46, 1704.089, 1992.297],
    "HEFT": [2015.219, 2266.992, 1965.56, 1653.007, 2183.121],
    "MinMin": [1445.282, 1693.146, 1746.883, 1303.972, 1468.098],
    "Random": [7045.046, 7317.212, 6856.393, 4416.07, 5558.296],
}


@pytest.fixture(scope="module")
def table_json():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--track", "workflows-v1", "--json"]) == 0
    return json.loads(out.getvalue())


def test_the_table_is_pinned(table_json):
    assert table_json["track"] == "workflows-v1"
    assert table_json["seeds"] == [0, 1, 2, 3, 4]
    got = {name: row["per_seed"] for name, row in table_json["baselines"].items()}
    assert list(got) == list(PINNED)
    for name, values in PINNED.items():
        assert got[name] == pytest.approx(values, abs=1e-3), name


def test_each_row_holds_every_metric_and_its_summary(table_json):
    for row in table_json["baselines"].values():
        assert row["mean"] == pytest.approx(sum(row["per_seed"]) / 5)
        assert row["metrics"]["mean_completion"] == pytest.approx(row["mean"])
        assert set(row["metrics"]) == {
            "mean_completion", "p95_completion", "makespan", "cpu_utilisation", "memory_utilisation",
            "weighted_utilisation", "sla_violation_rate",
        }  # fmt: skip
        assert 0 < row["metrics"]["cpu_utilisation"] < 1 and 0 <= row["metrics"]["sla_violation_rate"] <= 1


def test_the_text_table_has_a_row_per_baseline(capsys):
    assert main(["--track", "workflows-v1", "--seeds", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "workflows-v1  vms=[2, 2, 1] workflows=8 rate=0.004 seeds=[0]"
    assert [line.split()[0] for line in lines[2:]] == list(PINNED)
    assert lines[3].split()[1] == f"{PINNED['HEFT'][0]:.1f}"


def test_an_unknown_track_is_exit_2(capsys):
    assert main(["--track", "nope-v1"]) == 2
    assert capsys.readouterr().err.startswith("error: track 'nope-v1' has no baseline table: unknown track 'nope-v1'")
