"""workflows-v1 as a track: its metrics by hand, its wire form, its evaluation sets, its contract check."""

from __future__ import annotations

import json
import random
from importlib import resources
from pathlib import Path

import pytest

from layersched.sim.errors import EvalSetError, PolicyError
from layersched.sim.evalset import baseline_scores, dump_evalset, load_evalset, score_baselines
from layersched.sim.keyed_random import KeyedRandom
from layersched.sim.tracks import get_track
from layersched.sim.tracks.workflows_v1 import TRACK
from layersched.sim.tracks.workflows_v1.dag import parse_dag
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario, static_scenario
from layersched.sim.tracks.workflows_v1.schema import dag_hash
from tests.sim.workflows.paper import paper_json

# a on P0 (0-3); b can only run on P1: 6 GB at bandwidth 2 arrive at 6, b runs 6-8.
TWO = {"tasks": ["a", "b"], "edges": [["a", "b", 6]], "W": [[3, None], [None, 2]], "bandwidth": [[1, 2], [2, 1]]}


def test_the_metrics_of_a_two_task_dag_by_hand():
    run = TRACK.run_episode(static_scenario(parse_dag(TWO)), TRACK.baseline("HEFT"), random.Random(0), random.Random(0))
    m = run.metrics
    assert (m.mean_completion, m.p95_completion, m.makespan) == (8.0, 8.0, 8.0)
    # 3 + 2 core-seconds of the 2 x 8 there were; memory alike (1 GB each).
    assert (m.cpu_utilisation, m.memory_utilisation) == (5 / 16, 5 / 16)
    assert m.weighted_utilisation == pytest.approx(0.375 * 5 / 16 + 0.625 * 5 / 16)
    # a: ready 0, deadline 6, done 3. b: ready 3 (a finished), deadline 3 + 2 * 2 = 7, done 8: late.
    assert m.sla_violation_rate == 0.5


def test_the_track_is_registered_and_names_its_reference():
    assert get_track("workflows-v1") is TRACK
    assert TRACK.reference_baseline == "HEFT" and TRACK.primary_metric == "mean_completion"
    assert TRACK.baseline_names == ("FCFS", "HEFT", "MinMin", "Random")
    with pytest.raises(KeyError, match="unknown baseline 'X'; known: FCFS, HEFT, MinMin, Random"):
        TRACK.baseline("X")


@pytest.mark.parametrize(
    "scenario",
    [
        WorkflowScenario(),
        WorkflowScenario(vm_counts=(1, 0, 3), families=("ml",)),
        static_scenario(parse_dag(paper_json())),
    ],
    ids=["default", "custom", "static"],
)
def test_a_scenario_survives_the_wire_with_its_hash(scenario):
    back = TRACK.scenario_from_wire(TRACK.scenario_to_wire(scenario))
    assert back == scenario
    assert TRACK.scenario_hash(back) == TRACK.scenario_hash(scenario)


def test_scenarios_differing_in_any_field_hash_differently():
    hashes = {
        TRACK.scenario_hash(s)
        for s in (WorkflowScenario(), WorkflowScenario(spread=0.2), WorkflowScenario(deterministic=True),
                  WorkflowScenario(arrival_rate=0.0), WorkflowScenario(vm_counts=(2, 2, 2)))
    }  # fmt: skip
    assert len(hashes) == 5


def test_a_keyed_workload_plays_like_any_random():
    key = bytes(range(32))
    runs = [
        TRACK.run_episode(
            WorkflowScenario(n_workflows=2), TRACK.baseline("FCFS"), KeyedRandom(key, "e"), random.Random(0)
        )
        for _ in range(2)
    ]
    assert runs[0].metrics == runs[1].metrics and runs[0].metrics.mean_completion > 0


def test_check_policy_names_the_bad_reply():
    with pytest.raises(PolicyError, match=r"^step 0: action 0.0 \(float\) is not an int \(return int\(\.\.\.\)\)$"):
        TRACK.check_policy(lambda view, candidates, rng: 0.0, WorkflowScenario())
    TRACK.check_policy(TRACK.baseline("HEFT"), WorkflowScenario())


SET = """
format = "layersched-evalset"
version = 1
name = "flows"
track = "workflows-v1"

[[scenario]]
name = "two"
n_workflows = 2
vm_counts = [1, 1, 1]
families = ["ml", "etl"]
episodes = [{ seed = 0 }, { id = "h", key = "00112233445566778899aabbccddeeff" }]

[[scenario]]
name = "static-ml"
weight = 2.0
n_workflows = 2
arrival_rate = 0.0
spread = 0.05
deterministic = true
families = ["ml"]
episodes = [{ seed = 1 }]
"""


def write(tmp_path: Path, text: str, name: str = "set.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def assert_refused(tmp_path: Path, text: str, message: str) -> None:
    """Loading the set ``text`` (next to the paper's DAG file) fails with ``message``, after the file's path."""
    (tmp_path / "paper.json").write_text(json.dumps(paper_json()), encoding="utf-8")
    path = write(tmp_path, text)
    with pytest.raises(EvalSetError) as exc:
        load_evalset(path)
    assert str(exc.value) == f"{path}: {message}"


def test_an_evaluation_set_of_the_track_loads_dumps_back_and_scores(tmp_path):
    es = load_evalset(write(tmp_path, SET))
    assert es.track == "workflows-v1" and es.hidden
    assert es.scenarios[0].scenario == WorkflowScenario(n_workflows=2, vm_counts=(1, 1, 1), families=("ml", "etl"))
    again = load_evalset(write(tmp_path, dump_evalset(es), "again.toml"))
    assert (again.commitment, again.canonical()) == (es.commitment, es.canonical())
    records = score_baselines(es, tmp_path / "cache")
    assert list(records) == list(TRACK.baseline_names)
    scores = baseline_scores(es, tmp_path / "cache", "public")
    assert scores["HEFT"].overall == 1.0
    assert scores["Random"].overall > 1.0


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("vm_counts = [1, 1, 1]", "vm_counts = [1, 1]", "scenario 'two': vm_counts must be 3 counts >= 0 (small, "
         "medium, large), at least one VM; got (1, 1)"),
        ('families = ["ml", "etl"]', 'families = ["ml", "web"]', "scenario 'two': families must be some of "
         "montecarlo, ml, etl; got 'web'"),
        ("n_workflows = 2\nvm", "n_workflows = 0\nvm", "scenario 'two': n_workflows must be an integer >= 1, got 0"),
        ("deterministic = true", "deterministic = 1",
         "scenario 'static-ml': deterministic must be true or false, got 1"),
    ],
    ids=["vm-counts", "family", "n-workflows", "deterministic"],
)  # fmt: skip
def test_a_bad_scenario_is_named(tmp_path, old, new, message):
    assert_refused(tmp_path, SET.replace(old, new, 1), message)


def test_the_starter_kit_holds_a_policy_that_keeps_the_contract():
    package, folder = TRACK.starter
    files = {f.name: f for f in resources.files(package).joinpath(folder).iterdir() if f.name.endswith((".py", ".md"))}
    assert set(files) == {"policy.py", "train.py", "README.md"}
    namespace: dict = {"__file__": str(files["policy.py"])}  # policy.py finds its weights by it
    exec(files["policy.py"].read_text(), namespace)
    TRACK.check_policy(namespace["policy"], WorkflowScenario())
    run = TRACK.run_episode(WorkflowScenario(n_workflows=3), namespace["policy"], random.Random(0), random.Random(0))
    assert run.metrics.mean_completion > 0


@pytest.mark.parametrize(
    ("scenario", "spread"),
    [
        (WorkflowScenario(spread=0.2), 0.2),
        (WorkflowScenario(spread=0.2, deterministic=True), 0.0),
        (WorkflowScenario(spread=0.2, dag=parse_dag(paper_json())), 0.0),
    ],
    ids=["noisy", "deterministic", "static"],
)
def test_the_view_states_the_spread_the_durations_have(scenario, spread):
    seen = []
    TRACK.check_policy(lambda view, candidates, rng: seen.append(view.spread) or 0, scenario)
    assert set(seen) == {spread}


STATIC_SET = """
format = "layersched-evalset"
version = 1
name = "heft-conformance"
track = "workflows-v1"

[dags.paper]
file = "paper.json"

[[scenario]]
name = "paper"
dag = "paper"
episodes = [{ seed = 0 }]
"""


def static_set(tmp_path: Path, text: str = STATIC_SET) -> Path:
    (tmp_path / "paper.json").write_text(json.dumps(paper_json()), encoding="utf-8")
    return write(tmp_path, text)


def test_a_set_can_hold_a_static_dag_and_commits_to_its_content(tmp_path):
    es = load_evalset(static_set(tmp_path))
    assert es.scenarios[0].scenario == static_scenario(parse_dag(paper_json()))
    digest = dag_hash(parse_dag(paper_json()))
    assert es.canonical()["dags"] == {"paper": {"sha256": digest}}
    dumped = dump_evalset(es)
    assert f'sha256 = "{digest}"' in dumped
    again = load_evalset(write(tmp_path, dumped, "again.toml"))
    assert (again.commitment, again.canonical()) == (es.commitment, es.canonical())
    records = score_baselines(es, tmp_path / "cache")
    assert records["HEFT"][0].primary == 80.0  # the paper's makespan: one workflow, at time 0


def test_a_changed_dag_file_changes_the_commitment(tmp_path):
    before = load_evalset(static_set(tmp_path)).commitment
    changed = paper_json()
    changed["W"][9] = [21, 8, 16]
    (tmp_path / "paper.json").write_text(json.dumps(changed), encoding="utf-8")
    assert load_evalset(tmp_path / "set.toml").commitment != before


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('dag = "paper"', 'dag = "nope"', "scenario 'paper': dag must name a DAG of [dags] (known: paper), got 'nope'"),
        ('dag = "paper"', 'dag = "paper"\nn_workflows = 2', "scenario 'paper': a static DAG scenario takes no "
         "'n_workflows'"),
        ('file = "paper.json"', 'file = "paper.json"\nsha256 = "' + "0" * 64 + '"',
         "dag 'paper': 'paper.json' has content hash {digest}, but the set pins sha256 = " + "0" * 64),
        ('file = "paper.json"', 'file = "gone.json"', "dag 'paper': cannot read {gone!r}: No such file or directory"),
    ],
    ids=["unknown-dag", "mixed-keys", "wrong-pin", "missing-file"],
)  # fmt: skip
def test_a_bad_static_scenario_is_named(tmp_path, old, new, message):
    digest = dag_hash(parse_dag(paper_json()))
    assert_refused(
        tmp_path, STATIC_SET.replace(old, new, 1), message.format(digest=digest, gone=str(tmp_path / "gone.json"))
    )
