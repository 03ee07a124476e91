"""An evaluation set names its track (issue 17): parsing the id, the commitment, dumping."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

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
from layersched.sim.tracks import DEFAULT_TRACK_ID, registry, track_ids
from layersched.sim.tracks.layers_v1 import LayersTrack
from layersched.sim.tracks.layers_v1.baselines import BASELINES
from layersched.sim.tracks.simple_schema import IntegerScenarios
from layersched.sim.version import SIM_VERSION
from tests import toy_track
from tests.toy_track import ToyScenario

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
        ('track = "layers-v2"', "unknown track 'layers-v2'; known tracks: {known}"),
        ('track = "Layers"', "unknown track 'Layers'; known tracks: {known}"),
        ("track = 1", "track must be a track id such as 'layers-v1', got 1"),
    ],
    ids=["unknown", "malformed", "not-a-string"],
)
def test_an_unknown_track_is_named_with_the_known_ones(tmp_path: Path, line: str, message: str) -> None:
    path = write(tmp_path, sample_with(line))
    with pytest.raises(EvalSetError) as exc:
        load_evalset(path)
    # Other tests' modules may have registered tracks of their own in this process.
    assert "layers-v1" in track_ids()
    assert str(exc.value) == f"{path}: " + message.format(known=", ".join(track_ids()))


def test_a_set_built_in_code_checks_its_track() -> None:
    es = load_evalset(SAMPLE_PATH)
    with pytest.raises(EvalSetError) as exc:
        EvalSet("other", es.scenarios, track="nope-v1")
    assert str(exc.value) == f"unknown track 'nope-v1'; known tracks: {', '.join(track_ids())}"


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

TOY_SET = """
format = "layersched-evalset"
version = 1
name = "toys"
track = "toy-v1"

[[scenario]]
name = "small"
jobs = 5
episodes = [{ seed = 0 }, { seed = 1, split = "private" }]

[[scenario]]
name = "wide"
weight = 2.0
machines = 6
jobs = 40
episodes = [{ seed = 0 }, { id = "h", key = "00112233445566778899aabbccddeeff" }]
"""


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setitem(registry._registered, toy_track.TRACK.id, (toy_track.TRACK, toy_track.__name__))
    return toy_track.TRACK


def test_another_track_reads_its_own_scenarios(toy: Any, tmp_path: Path) -> None:
    es = load_evalset(write(tmp_path, TOY_SET))
    assert es.track == "toy-v1"
    assert [sc.scenario for sc in es.scenarios] == [ToyScenario(machines=3, jobs=5), ToyScenario(machines=6, jobs=40)]
    assert es.hidden  # the keyed episode
    canonical = es.canonical()
    assert canonical["track"] == "toy-v1"
    assert "catalogs" not in canonical
    assert canonical["scenarios"][1] == {
        "name": "wide",
        "weight": 2.0,
        "machines": 6,
        "jobs": 40,
        "episodes": [
            {"id": "seed0", "split": "public", "seed": 0},
            {"id": "h", "split": "public", "key": "00112233445566778899aabbccddeeff"},
        ],
    }
    dumped = dump_evalset(es)
    assert 'track = "toy-v1"' in dumped
    again = load_evalset(write(tmp_path, dumped, "again.toml"))
    assert (again.track, again.commitment, again.canonical()) == (es.track, es.commitment, canonical)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "jobs = 5\n",
            'jobs = 5\ncatalog = "lab"\n',
            "scenario 'small': unknown key 'catalog' (allowed: episodes, jobs, machines, name, weight)",
        ),
        ("jobs = 5\n", "jobs = 0\n", "scenario 'small': jobs must be an integer >= 1, got 0"),
        (
            'track = "toy-v1"\n',
            'track = "toy-v1"\n[catalogs.c]\nkind = "synthetic"\nseed = 1\n',
            "top level: unknown key 'catalogs' (allowed: description, format, name, scenario, template, track, "
            "version)",
        ),
    ],
    ids=["lab-key", "range", "lab-table"],
)
def test_another_tracks_scenarios_are_checked_by_it(toy: Any, tmp_path: Path, old: str, new: str, message: str) -> None:
    path = write(tmp_path, TOY_SET.replace(old, new, 1))
    with pytest.raises(EvalSetError) as exc:
        load_evalset(path)
    assert str(exc.value) == f"{path}: {message}"


def test_another_track_runs_and_scores_its_own_baselines(toy: Any, tmp_path: Path) -> None:
    es = load_evalset(write(tmp_path, TOY_SET))
    records = score_baselines(es, tmp_path / "cache")
    assert list(records) == ["Random", "LeastLoaded"]
    assert [(r.scenario, r.episode) for r in records["Random"]] == [
        ("small", "seed0"),
        ("small", "seed1"),
        ("wide", "seed0"),
        ("wide", "h"),
    ]
    assert all(r.primary == r.makespan and set(r.metrics) == {"makespan", "mean_load"} for r in records["Random"])
    assert score_baselines(es, tmp_path / "cache") == records  # read back from the cache
    played = evaluate_policy(es, toy_track.least_loaded, bundle_id=baseline_bundle_id("LeastLoaded"))
    assert played == records["LeastLoaded"]  # run_policies (one draw for both) plays what run_episode plays
    scores = baseline_scores(es, tmp_path / "cache", "public")
    assert scores["Random"].overall == 1.0
    assert scores["LeastLoaded"].overall < 1.0


@dataclass(frozen=True)
class Bounded:
    size: int = 2

    def __post_init__(self) -> None:
        if self.size > 9:
            raise ValueError(f"size must be at most 9, got {self.size}")


class BoundedSchema(IntegerScenarios):
    scenario_type = Bounded


def test_integer_scenarios_report_the_dataclass_check_with_the_scenario() -> None:
    schema = BoundedSchema()
    assert schema.scenario_keys == {"size"}
    assert schema.parse_scenario({"size": 3}, "scenario 's'", None) == (Bounded(3), None)
    with pytest.raises(EvalSetError) as exc:
        schema.parse_scenario({"size": 10}, "scenario 's'", None)
    assert str(exc.value) == "scenario 's': size must be at most 9, got 10"
    assert schema.scenario_hash(Bounded(3)) != schema.scenario_hash(Bounded(4))
    assert schema.scenario_from_wire(schema.scenario_to_wire(Bounded(3))) == Bounded(3)


def test_dump_quotes_a_table_name_that_is_not_a_bare_key(tmp_path: Path) -> None:
    # Catalog names may hold a dot; written bare, [catalogs.reg.v2] would be a table "v2" inside a table "reg".
    table = '[catalogs."reg.v2"]\nkind = "synthetic"\nseed = 4\nn_images = 9\n\n[[scenario]]'
    text = SAMPLE_PATH.read_text(encoding="utf-8").replace("[[scenario]]", table, 1)
    text = text.replace('catalog = "lab"', 'catalog = "reg.v2"', 1)
    es = load_evalset(write(tmp_path, text))
    dumped = dump_evalset(es)
    assert '[catalogs."reg.v2"]' in dumped
    assert load_evalset(write(tmp_path, dumped, "again.toml")).commitment == es.commitment


def test_each_tracks_public_sample_is_found_by_its_track() -> None:
    from layersched.sim.evalset.parse import sample_set_name

    assert sample_set_name("layers-v1") == "sample"
    assert sample_set_name("jobs-v1") == "jobs-sample"
    assert sample_set_name("workflows-v1") == "workflows-sample"
    assert sample_set_name("toy-v1") is None


def test_a_tracks_rules_hash_is_its_packages_code_without_the_starter(tmp_path: Path) -> None:
    from layersched.sim.tracks.layers_v1 import scenario as lab_scenario
    from layersched.sim.version import package_rules_hash

    package = tmp_path / "mine_v1"
    (package / "starter").mkdir(parents=True)
    (package / "data").mkdir()
    (package / "__init__.py").write_text("RATE = 1\n")
    (package / "starter" / "policy.py").write_text("def policy(a, b): return 0\n")
    first = package_rules_hash(package)
    (package / "starter" / "policy.py").write_text("def policy(a, b): return 1\n")
    (package / "data" / "catalog.json").write_text("[]\n")  # data is pinned by what a scenario reads of it
    assert package_rules_hash(package) == first  # a student's template is not a rule
    (package / "__init__.py").write_text("RATE = 2\n")
    second = package_rules_hash(package)
    assert second != first
    (package / "kernel.c").write_text("int rate(void) { return 2; }\n")  # C sources are rules (the lab's observe())
    assert package_rules_hash(package) != second
    # The lab's is made the same way (issue 31): its whole package, observe()'s kernel included, and every lab
    # scenario's hash holds it.
    lab = Path(lab_scenario.__file__).parent
    assert (lab / "_observe.c").is_file()
    assert LayersTrack.rules_hash == lab_scenario.RULES_HASH == package_rules_hash(lab)


def test_baseline_runs_cached_under_other_rules_of_the_track_are_recomputed(
    toy: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from layersched.sim.evalset import runs as evalset_runs

    path = tmp_path / "toy.toml"
    path.write_text(TOY_SET, encoding="utf-8")
    es = load_evalset(path)
    first = score_baselines(es, tmp_path / "cache")

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("recomputed")

    monkeypatch.setattr(evalset_runs, "_run_job", fail)
    assert score_baselines(es, tmp_path / "cache") == first  # the same rules: the cache answers
    monkeypatch.setattr(type(toy_track.TRACK), "rules_hash", "edited rules")
    with pytest.raises(AssertionError, match="recomputed"):
        score_baselines(es, tmp_path / "cache")
