"""jobs-v1's Gymnasium environment (issue 19): the checker passes; the mask is the track's; an episode played
through it is the track's episode (same actions, same rewards as the environment's); a refused void truncates."""

from __future__ import annotations

import random

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from layersched.sim.episodes import EpisodeSpec  # noqa: E402
from layersched.sim.tracks import get_track  # noqa: E402
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario  # noqa: E402
from layersched.sim.tracks.jobs_v1.view import JobsView  # noqa: E402

TRACK = get_track("jobs-v1")


@pytest.mark.parametrize("scenario", [JobsScenario(), JobsScenario(num_nw=5, new_job_rate=1.0)], ids=["paper", "nw5"])
def test_passes_gymnasium_env_checker(scenario: JobsScenario) -> None:
    env = TRACK.make_gym_env(scenario)
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=1)
    assert obs.shape == (20, (10 + 10 * scenario.num_nw) * 2 + 3 + 1)
    assert info["action_mask"].shape == (scenario.num_nw + 1,)
    assert (env.action_masks() == info["action_mask"].astype(bool)).all()


def test_sjf_through_the_gym_env_is_the_tracks_sjf_episode() -> None:
    scenario = JobsScenario(simu_len=40)
    env = TRACK.make_gym_env(scenario)
    _, info = env.reset(seed=3)
    actions, total, done = [], 0.0, False
    while not done:
        choice = TRACK.baseline("SJF")(JobsView(scenario, env.unwrapped._env.payload()), random.Random(0))
        action = scenario.void if choice is None else choice
        assert info["action_mask"][action] == 1
        actions.append(action)
        _, reward, done, truncated, info = env.step(action)
        assert not truncated
        total += reward
    run = TRACK.run_episode(scenario, TRACK.baseline("SJF"), EpisodeSpec("e", seed=3).workload_rng(), random.Random(0))
    assert tuple(actions) == run.actions
    assert total == pytest.approx(sum(env.unwrapped._env.rewards)) and total < 0


def test_a_refused_void_truncates_the_episode() -> None:
    env = TRACK.make_gym_env(JobsScenario(simu_len=2))
    env.reset(seed=0)
    truncated = False
    for _ in range(100):
        _, _, done, truncated, info = env.step(10)
        if done or truncated:
            break
    assert truncated and info["invalid_action"].endswith("a void would wait for nothing; place a job")


def test_reset_with_a_seed_is_reproducible_and_without_one_varies() -> None:
    env = TRACK.make_gym_env()
    first, _ = env.reset(seed=5)
    again, _ = env.reset(seed=5)
    assert (first == again).all()
    later = [env.reset()[0] for _ in range(3)]
    assert any(not np.array_equal(first, obs) for obs in later)


def test_step_before_reset_and_bad_action() -> None:
    env = TRACK.make_gym_env()
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action 11 is outside Discrete\(11\)"):
        env.step(11)
