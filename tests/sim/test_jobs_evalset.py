"""jobs-v1's public sample evaluation set (issue 19): it loads as the track's, dumps back to the same commitment,
and scores its baselines (SJF is the reference: 1.0)."""

from __future__ import annotations

from pathlib import Path

from layersched.sim import evalset
from layersched.sim.tracks import get_track
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sim" / "data" / "jobs_sample.toml"
# Its commitment as first published (a change of the file or of the canonical form shows here).
COMMITMENT = "b159fb47cd473675039047cb8bd8af28c737929e264ffd0c841790916f0e26eb"


def test_the_sample_loads_as_the_tracks_and_dumps_back_to_its_commitment(tmp_path: Path) -> None:
    es = evalset.load_evalset(SAMPLE)
    assert (es.track, es.commitment, es.hidden) == ("jobs-v1", COMMITMENT, False)
    assert evalset.load_evalset(REPO / "hidden_seeds" / "jobs-sample.toml").commitment == COMMITMENT
    assert [sc.scenario for sc in es.scenarios] == [JobsScenario(new_job_rate=r) for r in (0.7, 0.3, 1.0)]
    again = tmp_path / "again.toml"
    again.write_text(evalset.dump_evalset(es), encoding="utf-8")
    reread = evalset.load_evalset(again)
    assert (reread.track, reread.commitment, reread.canonical()) == ("jobs-v1", COMMITMENT, es.canonical())


def test_the_sample_scores_its_baselines_against_sjf(tmp_path: Path) -> None:
    es = evalset.load_evalset(SAMPLE)
    records = evalset.score_baselines(es, tmp_path / "cache")
    assert list(records) == ["SJF", "Packer", "Tetris*", "Random"]
    assert [(r.scenario, r.episode) for r in records["SJF"]][:3] == [
        ("paper-0.7", "seed0"),
        ("paper-0.7", "seed1"),
        ("paper-0.7", "seed2"),
    ]
    names = {spec.name for spec in get_track("jobs-v1").metric_specs}
    assert all(r.primary == r.mean_slowdown and set(r.metrics) == names for r in records["SJF"])
    played = evalset.evaluate_policy(
        es, get_track("jobs-v1").baseline("Packer"), bundle_id=evalset.baseline_bundle_id("Packer")
    )
    assert played == records["Packer"]
    for split in ("public", "private"):
        scores = evalset.baseline_scores(es, tmp_path / "cache", split)
        assert scores["SJF"].overall == 1.0
        assert scores["Packer"].overall > 1.0 and scores["Tetris*"].overall < 1.0
