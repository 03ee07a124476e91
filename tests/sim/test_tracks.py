"""The track registry and the lab track's two sides (issue 17 item 1): ids, errors that name the value, and the
sandbox's path (trusted simulator + replica) giving the in-process episode exactly."""

from __future__ import annotations

import random
import sys
import types
from pathlib import Path

import pytest

from layersched.sim.tracks import (
    DEFAULT_TRACK_ID,
    TrackError,
    check_track_id,
    get_track,
    load_track_module,
    registry,
    track_ids,
    track_module,
)
from layersched.sim.tracks.layers_v1.baselines import BASELINES
from layersched.sim.tracks.layers_v1.scenario import CloudNode, Scenario


def test_the_default_track_is_the_lab_and_is_built_in() -> None:
    track = get_track(DEFAULT_TRACK_ID)
    assert (track.id, track.reference_baseline, track.primary_metric) == ("layers-v1", "Greedy", "mean_completion")
    assert track.baseline_names == tuple(BASELINES)
    assert track.policy_arguments == "(env, task, rng)" and track.contract.startswith("policy(env, task, rng) -> int")
    assert track_module("layers-v1") == "layersched.sim.tracks.layers_v1"
    assert "layers-v1" in track_ids()
    assert track.decisions(Scenario(n_tasks=37)) == 37


def test_the_built_in_tracks_are_the_track_folders() -> None:
    assert registry.BUILTIN_MODULES == {
        "jobs-v1": "layersched.sim.tracks.jobs_v1",
        "layers-v1": "layersched.sim.tracks.layers_v1",
        "workflows-v1": "layersched.sim.tracks.workflows_v1",
    }
    assert [get_track(track_id).id for track_id in registry.BUILTIN_MODULES] == list(registry.BUILTIN_MODULES)


def test_a_track_folder_is_named_like_its_id(tmp_path: Path) -> None:
    for name in ("toy_v1", "bin_packing_v12", "data_v1", "Mixed_v1", "toy_v0", "notrack", "__pycache__"):
        (tmp_path / name).mkdir()
        if name != "data_v1":  # a folder without __init__.py is no package
            (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / "loose_v1.py").write_text("")
    assert registry.builtin_modules(tmp_path, "pkg") == {
        "bin-packing-v12": "pkg.bin_packing_v12",
        "toy-v1": "pkg.toy_v1",
    }


def test_a_built_in_track_whose_id_is_not_its_folders_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    misnamed = types.ModuleType("misnamed_track")
    misnamed.TRACK = types.SimpleNamespace(id="other-v1")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "misnamed_track", misnamed)
    monkeypatch.setitem(registry.BUILTIN_MODULES, "misnamed-v1", "misnamed_track")
    monkeypatch.setattr(registry, "_registered", dict(registry._registered))
    with pytest.raises(TrackError, match=r"^track module 'misnamed_track' defines track 'other-v1'; its folder makes "):
        get_track("misnamed-v1")


def test_an_unknown_track_names_the_known_ones() -> None:
    with pytest.raises(TrackError, match=r"^unknown track 'packing-v9'; known tracks: .*layers-v1"):
        get_track("packing-v9")


@pytest.mark.parametrize("bad", ["layers", "Layers-v1", "layers-v0", "layers_v1", "", 7, None])
def test_a_track_id_is_a_versioned_name(bad: object) -> None:
    with pytest.raises(TrackError, match="track id must look like 'name-v1'"):
        check_track_id(bad)


def test_a_module_that_is_not_a_track_is_refused_with_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TrackError, match=r"^track module 'no_such_tracks\.x' cannot be imported: "):
        load_track_module("no_such_tracks.x")
    monkeypatch.setitem(sys.modules, "empty_track_module", types.ModuleType("empty_track_module"))
    with pytest.raises(TrackError, match=r"^track module 'empty_track_module' defines no TRACK$"):
        load_track_module("empty_track_module")


def test_two_modules_cannot_define_one_track_id(monkeypatch: pytest.MonkeyPatch) -> None:
    impostor = types.ModuleType("impostor_track")
    impostor.TRACK = types.SimpleNamespace(id="layers-v1")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "impostor_track", impostor)
    get_track("layers-v1")
    with pytest.raises(TrackError, match=r"track 'layers-v1' is defined twice: .*'impostor_track'"):
        load_track_module("impostor_track")
    assert track_module("layers-v1") == "layersched.sim.tracks.layers_v1"


@pytest.mark.parametrize(
    "scenario", [Scenario(n_tasks=40), Scenario(n_tasks=30, cloud=CloudNode(), arrival_rate=0.6)], ids=["lab", "cloud"]
)
@pytest.mark.parametrize("baseline", ["Greedy", "Random", "LRS"])
def test_the_sandboxs_two_sides_play_the_in_process_episode(scenario: Scenario, baseline: str) -> None:
    """What the worker and the episode process do, in one process: the same actions and metrics as run_episode."""
    track = get_track("layers-v1")
    policy = track.baseline(baseline)
    replica = track.replica(track.scenario_from_wire(track.scenario_to_wire(scenario)))
    episode = track.simulator(scenario).episode(random.Random(5))
    replica.start(episode.start_message())
    payload, step, rng, actions = episode.first_decision(), 0, random.Random(9), []
    announced: list[object] = []
    while True:
        action = episode.check(replica.decide(policy, payload, step, rng), step)
        actions.append(action)
        assert replica.in_range(action)
        replica.accepted(action)
        if not episode.advance(action, announced.append):
            break
        payload, step = announced[-1], step + 1
    expected = track.run_episode(scenario, policy, random.Random(5), random.Random(9))
    assert tuple(actions) == expected.actions
    assert episode.metrics() == expected.metrics
    assert len(announced) == track.decisions(scenario) - 1
