"""``python -m layersched.sim heft DAG.json [--json]``: the plan, and one clear line and exit 2 for a bad DAG."""

from __future__ import annotations

import json

import pytest

from layersched.sim.cli import main
from tests.sim.workflows.paper import MAKESPAN, RANKS, paper_json

CYCLE = "the DAG has a cycle through task 'T1'"


def write(tmp_path, content: str):
    path = tmp_path / "dag.json"
    path.write_text(content, encoding="utf-8")
    return path


def test_json_output_names_tasks_by_id(tmp_path, capsys):
    path = write(tmp_path, json.dumps(paper_json()))
    assert main(["heft", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"rank_u", "schedule", "makespan"}
    assert out["rank_u"] == pytest.approx(RANKS, abs=5e-4)
    assert out["makespan"] == MAKESPAN
    assert out["schedule"][0] == {"task": "T0", "proc": 2, "start": 0.0, "finish": 9.0}
    assert [s["task"] for s in out["schedule"]] == ["T0", "T2", "T3", "T1", "T4", "T5", "T8", "T6", "T7", "T9"]


def test_text_output_lists_each_task_and_the_makespan(tmp_path, capsys):
    path = write(tmp_path, json.dumps(paper_json()))
    assert main(["heft", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["task", "rank_u", "proc", "start", "finish"]
    assert lines[1].split() == ["T0", "108.000", "2", "0.000", "9.000"]
    assert lines[-1] == "makespan 80.000"
    assert len(lines) == 12


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
        (json.dumps({**paper_json(), "edges": [["T1", "T2", 1], ["T2", "T1", 1]]}), CYCLE),
        (
            json.dumps({**paper_json(), "W": [[1, 2]] * 10}),
            "W row 0 (task 'T0') has 2 entries, but bandwidth names 3 processors",
        ),
        ("[1, 2]", "a DAG must be a JSON object, got list"),
    ],
    ids=["bad-json", "cycle", "matrix-size", "not-an-object"],
)
def test_a_bad_dag_is_one_line_naming_the_value_and_exit_2(tmp_path, capsys, content, message):
    path = write(tmp_path, content)
    assert main(["heft", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"error: {str(path)!r}: {message}\n"


def test_a_missing_file_is_exit_2(tmp_path, capsys):
    assert main(["heft", str(tmp_path / "nope.json")]) == 2
    assert capsys.readouterr().err == f"error: cannot read {str(tmp_path / 'nope.json')!r}: No such file or directory\n"
