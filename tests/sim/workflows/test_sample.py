"""workflows-v1's public sample evaluation set: it loads as the track's, dumps back to the same commitment, and
scores its baselines (HEFT is the reference: 1.0)."""

from __future__ import annotations

from pathlib import Path

from layersched.sim import evalset
from layersched.sim.tracks import get_track
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "sim" / "data" / "workflows_sample.toml"
# Its commitment as first published (a change of the file or of the canonical form shows here).
COMMITMENT = "6ccb701fd641f93ad0bafc7e82d3bf46dd2d628d11e796f393163d4997d28691"


def test_the_sample_loads_as_the_tracks_and_dumps_back_to_its_commitment(tmp_path: Path) -> None:
    es = evalset.load_evalset(evalset.evalset_file("workflows-sample"))
    assert (es.track, es.commitment, es.hidden) == ("workflows-v1", COMMITMENT, False)
    assert evalset.load_evalset(REPO / "hidden_seeds" / "workflows-sample.toml").commitment == COMMITMENT
    assert [sc.scenario for sc in es.scenarios] == [
        WorkflowScenario(),
        WorkflowScenario(families=("etl",), arrival_rate=0.01),
        WorkflowScenario(families=("ml",), arrival_rate=0.0),
    ]
    again = tmp_path / "again.toml"
    again.write_text(evalset.dump_evalset(es), encoding="utf-8")
    assert evalset.load_evalset(again).commitment == COMMITMENT


def test_the_sample_scores_its_baselines_against_heft(tmp_path: Path) -> None:
    es = evalset.load_evalset(SAMPLE)
    track = get_track("workflows-v1")
    records = evalset.score_baselines(es, tmp_path / "cache")
    assert list(records) == list(track.baseline_names)
    assert all(r.primary == r.metrics["mean_completion"] for r in records["HEFT"])
    for split in ("public", "private"):
        scores = evalset.baseline_scores(es, tmp_path / "cache", split)
        assert scores["HEFT"].overall == 1.0
        assert scores["FCFS"].overall > 1.0 and scores["Random"].overall > 2.0
