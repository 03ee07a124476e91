from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from layersched.sim.cli import main


def test_table_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--tasks", "40", "--seeds", "0-1", "--baselines", "Greedy,Kube", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["baselines"]) == {"Greedy", "Kube"}
    assert len(out["baselines"]["Greedy"]["per_seed"]) == 2
    assert out["scenario"]["n_tasks"] == 40


def test_table_text_is_the_lab_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--baselines", "Greedy"]) == 0
    assert "Greedy          60.2 +-   3.4 s" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nodes", "0"], "argument --nodes: expected a positive integer, got 0"),
        (["--rate", "fast"], "argument --rate: expected a positive number, got 'fast'"),
        (["--seeds", "a-b"], "argument --seeds: seeds must look like 0-4 or 0,3,7, got 'a-b'"),
        (["--baselines", "Smart"], "unknown baseline 'Smart'"),
    ],
    ids=["zero-nodes", "bad-rate", "bad-seeds", "bad-baseline"],
)
def test_bad_arguments(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_unknown_catalog_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--catalog", "missing.json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown catalog 'missing.json'") and "Traceback" not in err


def test_catalog_regeneration_reproduces_the_shipped_file(tmp_path: Path) -> None:
    out = tmp_path / "lab.json"
    subprocess.run(
        [sys.executable, "-m", "layersched.sim", "catalog", "--seed", "0", "--out", str(out)],
        check=True,
        capture_output=True,
    )
    shipped = Path(__file__).resolve().parents[3] / "sim" / "tracks" / "layers_v1" / "data" / "lab_seed0.json"
    assert out.read_bytes() == shipped.read_bytes()
