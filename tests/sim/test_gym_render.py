"""The Gymnasium environments render (issue 33): ``render_mode="rgb_array"`` and ``"ansi"`` pass gymnasium's
checker (each mode made through a registered spec), every frame of an episode has one size, and the last frame is
the schedule record's drawing: the same pixels as the replay of the episode's actions."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from layersched.sim.episodes import SeededRandom  # noqa: E402
from layersched.sim.tracks import get_track  # noqa: E402
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario  # noqa: E402
from layersched.sim.tracks.layers_v1.scenario import Scenario  # noqa: E402
from layersched.sim.tracks.schedules import schedule_views  # noqa: E402
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario  # noqa: E402

CASES = [
    ("layers-v1", "layersched.sim.tracks.layers_v1.gym_env:LayerSchedEnv", Scenario(n_tasks=40)),
    ("jobs-v1", "layersched.sim.tracks.jobs_v1.gym_env:JobsGymEnv", JobsScenario(simu_len=30)),
    ("workflows-v1", "layersched.sim.tracks.workflows_v1.gym_env:WorkflowGymEnv", WorkflowScenario(n_workflows=2)),
]
IDS = [case[0] for case in CASES]


def _registered(track_id: str, entry_point: str, scenario: Any) -> str:
    env_id = f"layersched-test/{track_id.replace('-v1', '').capitalize()}Render-v1"
    if env_id not in gymnasium.registry:
        gymnasium.register(env_id, entry_point=entry_point, kwargs={"scenario": scenario})
    return env_id


@pytest.mark.parametrize(("track_id", "entry_point", "scenario"), CASES, ids=IDS)
def test_every_render_mode_passes_the_checker(track_id: str, entry_point: str, scenario: Any) -> None:
    env = gymnasium.make(_registered(track_id, entry_point, scenario), render_mode="rgb_array").unwrapped
    check_env(env)  # the render check included: it makes the env in each declared mode and renders it


@pytest.mark.parametrize(("track_id", "entry_point", "scenario"), CASES, ids=IDS)
def test_frames_keep_their_size_and_the_last_is_the_replays_drawing(
    track_id: str, entry_point: str, scenario: Any
) -> None:
    track = get_track(track_id)
    env = track.make_gym_env(scenario, render_mode="rgb_array")
    text = track.make_gym_env(scenario, render_mode="ansi")
    _obs, info = env.reset(seed=3)
    text.reset(seed=3)
    assert env.render().shape == (env.render().shape[0], 640, 3)
    rng = random.Random(0)
    frames, done = [], False
    while not done:
        allowed = np.flatnonzero(info["action_mask"])
        action = int(rng.choice(list(allowed)))
        _obs, _reward, done, truncated, info = env.step(action)
        text.step(action)
        assert not truncated
        frames.append(env.render())
    assert len({frame.shape for frame in frames}) == 1, "one size all episode long"
    assert frames[-1].dtype == np.uint8 and len({tuple(p) for p in frames[-1].reshape(-1, 3)}) > 3
    views = schedule_views(track)
    assert views is not None
    if track_id == "jobs-v1":
        record = views.replay(scenario, SeededRandom(3), env._recorder.record().actions)
    elif track_id == "layers-v1":
        record = views.replay(scenario, random.Random(env.workload_seed), env._recorder.record().actions)
    else:
        record = views.replay(scenario, random.Random(env.workload_seed), env._actions)
    assert record.metrics is not None, "the episode ended"
    assert (views.rgb_array(record) == frames[-1]).all(), "the frame is the replayed record's drawing"
    assert text.render() == views.ansi(record)


@pytest.mark.parametrize(("track_id", "entry_point", "scenario"), CASES, ids=IDS)
def test_without_a_render_mode_render_returns_none_and_a_bad_mode_is_named(
    track_id: str, entry_point: str, scenario: Any
) -> None:
    env = get_track(track_id).make_gym_env(scenario)
    env.reset(seed=1)
    assert env.render() is None
    with pytest.raises(ValueError, match=r"^render_mode must be one of \['rgb_array', 'ansi'\] or None, got 'human'$"):
        get_track(track_id).make_gym_env(scenario, render_mode="human")
