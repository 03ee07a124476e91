"""The progress lines of serve and `evalset register` while the baseline rows are scored (issue 16, item 13)."""

from __future__ import annotations

import pytest

from layersched.worker.evalsets import BaselineProgress, progress_for


def lines_for(total: int, capsys: pytest.CaptureFixture[str], workers: int = 2) -> list[str]:
    progress = BaselineProgress(workers=workers)
    for done in range(1, total + 1):
        progress(done, total)
    return capsys.readouterr().out.splitlines()


def test_a_line_each_tenth_of_the_episodes_after_saying_what_runs(capsys: pytest.CaptureFixture[str]) -> None:
    lines = lines_for(150, capsys)
    assert lines[0] == (
        "layersched: scoring the 6 baselines on the 150 episodes (2 processes; once per evaluation set and"
        " simulator version)"
    )
    assert lines[1:] == [f"layersched: baselines {done}/150 episodes" for done in range(15, 151, 15)]


def test_few_episodes_get_a_line_each_and_never_more_processes_than_episodes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = lines_for(3, capsys, workers=8)
    assert "on the 3 episodes (3 processes;" in lines[0]
    assert lines[1:] == [f"layersched: baselines {done}/3 episodes" for done in (1, 2, 3)]


def test_the_line_counts_the_tracks_baselines(capsys: pytest.CaptureFixture[str]) -> None:
    """jobs-v1 has four baselines, not the lab's six (issue 29)."""
    from layersched.sim.tracks import get_track

    progress_of = progress_for(2)
    from layersched.sim.evalset import evalset_file, load_evalset

    progress_of(load_evalset(evalset_file("jobs-sample")))(1, 20)
    assert capsys.readouterr().out.startswith("layersched: scoring the 4 baselines on the 20 episodes (2 processes;")
    assert len(get_track("jobs-v1").baseline_names) == 4
