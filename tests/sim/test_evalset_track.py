"""An evaluation set names its track (issue 17): parsing the id, the commitment, dumping."""

from __future__ import annotations

from pathlib import Path

import pytest

from layersched.sim.baselines import BASELINES
from layersched.sim.errors import EvalSetError
from layersched.sim.evalset import (
    SAMPLE_PATH,
    EvalSet,
    baseline_bundle_id,
    baseline_scores,
    dump_evalset,
    evaluate_policy,
    load_evalset,
    score_baselines,
)
from layersched.sim.tracks import DEFAULT_TRACK_ID, registry
from layersched.sim.tracks.layers_v1 import LayersTrack
from layersched.sim.version import SIM_VERSION
from tests.sim import toy_track
from tests.sim.toy_track import QueueScenario, QueueTrack

# The sample's commitment as published before tracks existed (hidden_seeds/README.md).
SAMPLE_COMMITMENT = "4eea9854e880b370ee76f9e2a453bfcc817417738adc157f89ebe8010e85f01d"


def sample_with(line: str) -> str:
    text = SAMPLE_PATH.read_text(encoding="utf-8")
    assert 'name = "sample"\n' in text
    return text.replace('name = "sample"\n', f'name = "sample"\n{line}\n', 1)


def write(tmp_path: Path, text: str, name: str = "set.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_set_without_a_track_is_the_default_track() -> None:
    es = load_evalset(SAMPLE_PATH)
    assert es.track == DEFAULT_TRACK_ID == "layers-v1"
    assert es.commitment == SAMPLE_COMMITMENT
    assert "track" not in es.canonical()


def test_naming_the_default_track_keeps_the_commitment(tmp_path: Path) -> None:
    es = load_evalset(write(tmp_path, sample_with('track = "layers-v1"')))
    assert es.track == "layers-v1"
    assert es.commitment == SAMPLE_COMMITMENT
    assert es.canonical() == load_evalset(SAMPLE_PATH).canonical()
    dumped = dump_evalset(es)
    assert "track" not in dumped  # absent means the default, as in the canonical form
    again = load_evalset(write(tmp_path, dumped, "again.toml"))
    assert (again.track, again.commitment) == ("layers-v1", SAMPLE_COMMITMENT)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('track = "layers-v2"', "unknown track 'layers-v2'; known tracks: layers-v1"),
        ('track = "Layers"', "unknown track 'Layers'; known tracks: layers-v1"),
        ("track = 1", "track must be a track id such as 'layers-v1', got 1"),
    ],
    ids=["unknown", "malformed", "not-a-string"],
)
def test_an_unknown_track_is_named_with_the_known_ones(tmp_path: Path, line: str, message: str) -> None:
    path = write(tmp_path, sample_with(line))
    with pytest.raises(EvalSetError) as exc:
        load_evalset(path)
    assert str(exc.value) == f"{path}: {message}"


def test_a_set_built_in_code_checks_its_track() -> None:
    es = load_evalset(SAMPLE_PATH)
    with pytest.raises(EvalSetError) as exc:
        EvalSet("other", es.scenarios, track="nope-v1")
    assert str(exc.value) == "unknown track 'nope-v1'; known tracks: layers-v1"


# ------------------------------------------------------------------------------------------------ runs


class KubeReferenced(LayersTrack):
    """The lab's problem, scored as another track would be: three baselines, Kube the reference, the tail primary."""

    id = "kube-lab-v1"
    baseline_names = ("Random", "Kube", "Greedy")
    reference_baseline = "Kube"
    primary_metric = "p95_completion"


@pytest.fixture
def kube_lab(monkeypatch: pytest.MonkeyPatch) -> EvalSet:
    # Registered for this test only: other tests list the known tracks.
    monkeypatch.setitem(registry._registered, KubeReferenced.id, (KubeReferenced(), __name__))
    sample = load_evalset(SAMPLE_PATH)
    return EvalSet("kube-lab", sample.scenarios[:1], track=KubeReferenced.id)


def test_the_commitment_names_a_track_other_than_the_default(kube_lab: EvalSet) -> None:
    default = EvalSet("kube-lab", kube_lab.scenarios)
    assert kube_lab.canonical() == {**default.canonical(), "track": "kube-lab-v1"}
    assert kube_lab.commitment != default.commitment


def test_runs_take_baselines_reference_and_metric_from_the_track(kube_lab: EvalSet, tmp_path: Path) -> None:
    records = score_baselines(kube_lab, tmp_path)
    assert list(records) == ["Random", "Kube", "Greedy"]
    assert (tmp_path / f"baselines-{kube_lab.commitment}-{SIM_VERSION}.json").is_file()
    kube = records["Kube"]
    assert [r.primary for r in kube] == [r.p95_completion for r in kube]
    assert [set(r.metrics) for r in kube] == [{"mean_completion", "p95_completion", "cloud_share"}] * 3
    scores = baseline_scores(kube_lab, tmp_path, "public")
    assert scores["Kube"].overall == 1.0
    assert scores["Greedy"].overall != 1.0
    # The same lab episodes as under layers-v1: only what is scored changed.
    lab = score_baselines(EvalSet("kube-lab", kube_lab.scenarios))
    assert [r.trace_hash for r in kube] == [r.trace_hash for r in lab["Kube"]]
    played = evaluate_policy(kube_lab, BASELINES["Kube"], bundle_id=baseline_bundle_id("Kube"))
    assert played == kube


def test_records_read_back_from_the_cache(kube_lab: EvalSet, tmp_path: Path) -> None:
    first = score_baselines(kube_lab, tmp_path)
    assert score_baselines(kube_lab, tmp_path) == first
    assert first["Greedy"][0].mean_completion == first["Greedy"][0].metrics["mean_completion"]
    with pytest.raises(AttributeError, match="'EpisodeRecord' has no field or metric 'makespan'"):
        _ = first["Greedy"][0].makespan


# ------------------------------------------------------------------------------------------------ another track

QUEUE_SET = """
format = "layersched-evalset"
version = 1
name = "queues"
track = "queue-v1"

[[scenario]]
name = "short"
n_jobs = 5
episodes = [{ seed = 0 }, { seed = 1, split = "private" }]

[[scenario]]
name = "long"
weight = 2.0
n_jobs = 12
max_duration = 30
episodes = [{ seed = 0 }, { id = "h", key = "00112233445566778899aabbccddeeff" }]
"""


@pytest.fixture
def queue_track(monkeypatch: pytest.MonkeyPatch) -> QueueTrack:
    monkeypatch.setitem(registry._registered, toy_track.TRACK.id, (toy_track.TRACK, toy_track.__name__))
    return toy_track.TRACK


def test_another_track_reads_its_own_scenarios(queue_track: QueueTrack, tmp_path: Path) -> None:
    es = load_evalset(write(tmp_path, QUEUE_SET))
    assert es.track == "queue-v1"
    assert [sc.scenario for sc in es.scenarios] == [QueueScenario(5, 9), QueueScenario(12, 30)]
    assert es.hidden  # the keyed episode
    canonical = es.canonical()
    assert canonical["track"] == "queue-v1"
    assert "catalogs" not in canonical
    assert canonical["scenarios"][1] == {
        "name": "long",
        "weight": 2.0,
        "n_jobs": 12,
        "max_duration": 30,
        "episodes": [
            {"id": "seed0", "split": "public", "seed": 0},
            {"id": "h", "split": "public", "key": "00112233445566778899aabbccddeeff"},
        ],
    }
    dumped = dump_evalset(es)
    assert 'track = "queue-v1"' in dumped
    again = load_evalset(write(tmp_path, dumped, "again.toml"))
    assert (again.track, again.commitment, again.canonical()) == (es.track, es.commitment, canonical)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "n_jobs = 5\n",
            'n_jobs = 5\ncatalog = "lab"\n',
            "scenario 'short': unknown key 'catalog' (allowed: episodes, max_duration, n_jobs, name, weight)",
        ),
        ("n_jobs = 5\n", "n_jobs = 0\n", "scenario 'short': n_jobs must be an integer >= 1, got 0"),
        ("n_jobs = 5\n", "n_jobs = 5000\n", "scenario 'short': n_jobs must be at most 1000, got 5000"),
        (
            'track = "queue-v1"\n',
            'track = "queue-v1"\n[catalogs.c]\nkind = "synthetic"\nseed = 1\n',
            "top level: unknown key 'catalogs' (allowed: description, format, name, scenario, template, track, "
            "version)",
        ),
    ],
    ids=["lab-key", "range", "dataclass-check", "lab-table"],
)
def test_another_tracks_scenarios_are_checked_by_it(
    queue_track: QueueTrack, tmp_path: Path, old: str, new: str, message: str
) -> None:
    path = write(tmp_path, QUEUE_SET.replace(old, new, 1))
    with pytest.raises(EvalSetError) as exc:
        load_evalset(path)
    assert str(exc.value) == f"{path}: {message}"


def test_another_track_runs_and_scores_its_own_baselines(queue_track: QueueTrack, tmp_path: Path) -> None:
    es = load_evalset(write(tmp_path, QUEUE_SET))
    records = score_baselines(es, tmp_path / "cache")
    assert list(records) == ["fifo", "shortest-first"]
    assert [(r.scenario, r.episode) for r in records["fifo"]] == [
        ("short", "seed0"),
        ("short", "seed1"),
        ("long", "seed0"),
        ("long", "h"),
    ]
    assert all(r.primary == r.mean_flow and set(r.metrics) == {"mean_flow", "makespan"} for r in records["fifo"])
    assert score_baselines(es, tmp_path / "cache") == records  # read back from the cache
    played = evaluate_policy(es, toy_track.shortest_first, bundle_id=baseline_bundle_id("shortest-first"))
    assert played == records["shortest-first"]
    scores = baseline_scores(es, tmp_path / "cache", "public")
    assert scores["fifo"].overall == 1.0
    assert scores["shortest-first"].overall < 1.0  # shortest first minimises the mean flow time


def test_dump_quotes_a_table_name_that_is_not_a_bare_key(tmp_path: Path) -> None:
    # Catalog names may hold a dot; written bare, [catalogs.reg.v2] would be a table "v2" inside a table "reg".
    table = '[catalogs."reg.v2"]\nkind = "synthetic"\nseed = 4\nn_images = 9\n\n[[scenario]]'
    text = SAMPLE_PATH.read_text(encoding="utf-8").replace("[[scenario]]", table, 1)
    text = text.replace('catalog = "lab"', 'catalog = "reg.v2"', 1)
    es = load_evalset(write(tmp_path, text))
    dumped = dump_evalset(es)
    assert '[catalogs."reg.v2"]' in dumped
    assert load_evalset(write(tmp_path, dumped, "again.toml")).commitment == es.commitment
