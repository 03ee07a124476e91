"""The jobs-v1 model (issue 19): its scenario, workload source and dynamics, and each decision on a quirk of the
reference that docs/tracks/jobs-v1.md lists (numbered as there)."""

from __future__ import annotations

import copy
import itertools
import pickle
import random

import numpy as np
import pytest

from layersched.sim.episodes import EpisodeSpec, SeededRandom
from layersched.sim.errors import PolicyError
from layersched.sim.tracks import get_track
from layersched.sim.tracks.jobs_v1 import sandbox as jobs_sandbox
from layersched.sim.tracks.jobs_v1.env import JobsEnv
from layersched.sim.tracks.jobs_v1.metrics import episode_metrics
from layersched.sim.tracks.jobs_v1.sandbox import check_reply
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario, expected_load
from layersched.sim.tracks.jobs_v1.view import JobsView, image_width
from layersched.sim.tracks.jobs_v1.workload import Job, LegacyDraws, draw_jobs, workload_state

TRACK = get_track("jobs-v1")
DEFAULT = JobsScenario()


def jobs(*specs: tuple[int, int, tuple[int, int]]) -> list[Job]:
    """Jobs from (arrival, length, demand), ids in order."""
    return [Job(i, arrival, length, demand) for i, (arrival, length, demand) in enumerate(specs)]


def seeded(seed: int) -> random.Random:
    return EpisodeSpec("e", seed=seed).workload_rng()


def test_the_defaults_are_the_papers() -> None:
    s = DEFAULT
    assert (s.num_res, s.res_slot, s.time_horizon, s.num_nw, s.backlog_size) == (2, 10, 20, 10, 60)
    assert (s.max_job_len, s.max_job_size, s.simu_len, s.new_job_rate) == (15, 10, 50, 0.7)
    # The code's bi-modal ranges (Python 2's integer division of the maxima), not the paper's text.
    assert (s.short_len, s.long_len, s.dominant_demand, s.minor_demand) == ((1, 3), (10, 15), (5, 10), (1, 2))


@pytest.mark.parametrize(
    ("rate", "load"), [(0.3, 0.5535), (0.5, 0.9225), (0.7, 1.2915), (1.0, 1.845)], ids=["0.3", "0.5", "0.7", "1.0"]
)
def test_the_load_a_rate_implies(rate: float, load: float) -> None:
    # E[len] = 0.8 * 2 + 0.2 * 12.5 = 4.1; E[demand] = (7.5 + 1.5) / 2 = 4.5; capacity 10.
    assert expected_load(JobsScenario(new_job_rate=rate)) == pytest.approx(load)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"num_res": 3}, "num_res must be 2 in jobs-v1 (its metrics name two resources), got 3"),
        ({"new_job_rate": 0.0}, "new_job_rate must be in (0, 1], got 0.0"),
        ({"new_job_rate": 1.5}, "new_job_rate must be in (0, 1], got 1.5"),
        ({"max_job_len": 21}, "max_job_len 21 exceeds time_horizon 20: such a job never fits"),
        ({"max_job_size": 11}, "max_job_size 11 exceeds res_slot 10: such a job never fits"),
        (
            {"max_job_len": 4},
            "max_job_len and max_job_size must be >= 5 (the distribution's short and minor ranges), got 4 and 10",
        ),
        (
            {"backlog_size": 50},
            "backlog_size 50 must be a multiple of time_horizon 20 (the image draws the backlog as full columns)",
        ),
    ],
    ids=["num-res", "rate-zero", "rate-above-one", "long-job", "big-job", "short-range", "backlog-columns"],
)
def test_a_scenario_that_cannot_be_played_is_refused(fields: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError) as exc:
        JobsScenario(**fields)  # type: ignore[arg-type]
    assert str(exc.value) == message


def test_a_seeded_generator_is_the_standard_stream_and_knows_its_seed() -> None:
    for seed in (0, 1, 12345):
        ours, standard = seeded(seed), random.Random(seed)
        assert isinstance(ours, SeededRandom) and ours.origin == seed
        assert [ours.random() for _ in range(50)] == [standard.random() for _ in range(50)]
        assert [ours.getrandbits(64) for _ in range(5)] == [standard.getrandbits(64) for _ in range(5)]
    rng = SeededRandom(3)
    rng.random()
    for twin in (copy.deepcopy(rng), pickle.loads(pickle.dumps(rng))):
        assert isinstance(twin, SeededRandom) and twin.origin == 3
        assert twin.random() == copy.copy(rng).random()
    rng.seed("text")
    assert rng.origin is None


def test_3_a_keyed_episode_draws_from_its_key_and_each_seed_is_its_own() -> None:
    key_a, key_b = bytes(range(16)), bytes(range(1, 17))

    def keyed(key: bytes) -> list[Job]:
        return draw_jobs(DEFAULT, workload_state(EpisodeSpec("h", key=key).workload_rng()))

    assert keyed(key_a) == keyed(key_a)
    assert keyed(key_a) != keyed(key_b)
    # The reference's unseen runs replay seed 42; here an episode is its seed's (or key's), and no other.
    assert len({tuple(draw_jobs(DEFAULT, workload_state(seeded(seed)))) for seed in range(10)}) == 10
    # A seed's episode is not the keyed stream's, nor a plain random.Random's of the same number.
    assert draw_jobs(DEFAULT, workload_state(seeded(0))) == draw_jobs(DEFAULT, np.random.RandomState(0))
    assert draw_jobs(DEFAULT, workload_state(random.Random(0))) != draw_jobs(DEFAULT, np.random.RandomState(0))


def test_a_seed_beyond_numpys_range_is_played_from_its_words() -> None:
    big = (7 << 32) | 5
    assert draw_jobs(DEFAULT, workload_state(seeded(big))) == draw_jobs(DEFAULT, np.random.RandomState([5, 7]))


class CountedDraws:
    """A workload's legacy generator that counts the draws asked of it (``rand`` and ``randint`` calls)."""

    def __init__(self, state: LegacyDraws) -> None:
        self.state = state
        self.calls = 0

    def rand(self) -> float:
        self.calls += 1
        return self.state.rand()

    def randint(self, low: int, high: int) -> int:
        self.calls += 1
        return self.state.randint(low, high)


def count_draws(monkeypatch: pytest.MonkeyPatch) -> list[CountedDraws]:
    """Make every episode of the track's simulator draw through a ``CountedDraws``; the list gets them in order."""
    counted: list[CountedDraws] = []

    def counted_state(workload: random.Random) -> CountedDraws:
        counted.append(CountedDraws(workload_state(workload)))
        return counted[-1]

    monkeypatch.setattr(jobs_sandbox, "workload_state", counted_state)
    return counted


@pytest.mark.parametrize("rate", [0.3, 0.7, 1.0], ids=["rate0.3", "rate0.7", "rate1"])
@pytest.mark.parametrize(
    "spec", [EpisodeSpec("s", seed=3), EpisodeSpec("k", key=bytes(range(32)))], ids=["seeded", "keyed"]
)
def test_the_episode_draws_each_step_when_time_reaches_it_as_the_whole_draw_does(
    rate: float, spec: EpisodeSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30, item 6: the sandboxed episode draws a step's arrival when its time comes (nothing of a later step
    before), from the stream the whole draw takes: at every decision at time t, exactly the draws of steps 0..t were
    made (one ``rand`` for a step without a job, 4 + num_res calls for one with a job), and the jobs are the whole
    draw's."""
    scenario = JobsScenario(new_job_rate=rate)
    whole = draw_jobs(scenario, workload_state(spec.workload_rng()))
    arrivals = {job.arrival for job in whole}
    through = list(itertools.accumulate(4 + scenario.num_res if t in arrivals else 1 for t in range(scenario.simu_len)))
    counted = count_draws(monkeypatch)
    episode = TRACK.simulator(scenario).episode(spec.workload_rng())
    payload, step, last = episode.first_decision(), 0, scenario.simu_len - 1
    sjf = TRACK.baseline("SJF")
    while payload is not None:
        assert counted[0].calls == through[min(payload[0], last)], f"step {step} at time {payload[0]}"
        choice = sjf(JobsView(scenario, payload), random.Random(0))
        payloads: list[tuple[int, ...]] = []
        payload = payloads[0] if episode.advance(episode.check(choice, step), payloads.append) else None
        step += 1
    assert counted[0].calls == through[-1]
    assert episode.env is not None and episode.env.jobs == whole


def test_drawn_jobs_follow_the_bimodal_distribution() -> None:
    drawn = [job for seed in range(20) for job in draw_jobs(DEFAULT, workload_state(seeded(seed)))]
    assert {job.length for job in drawn} <= set(range(1, 4)) | set(range(10, 16))
    for job in drawn:
        big, small = max(job.demand), min(job.demand)
        assert 5 <= big <= 10 and 1 <= small <= 2
    short = sum(job.length <= 3 for job in drawn) / len(drawn)
    assert 0.7 < short < 0.9
    assert 0.6 < len(drawn) / (20 * DEFAULT.simu_len) < 0.8  # rate 0.7


def test_1_the_job_of_step_0_enters_at_time_0() -> None:
    seed = next(s for s in range(100) if draw_jobs(DEFAULT, np.random.RandomState(s))[0].arrival == 0)
    first = draw_jobs(DEFAULT, np.random.RandomState(seed))[0]
    env = JobsEnv(DEFAULT, draw_jobs(DEFAULT, np.random.RandomState(seed)))
    assert (env.time, env.slots[0]) == (0, first)


def test_4_a_job_is_placed_at_its_earliest_offset_up_to_the_last_one_in_the_horizon() -> None:
    env = JobsEnv(DEFAULT, jobs((0, 15, (10, 1)), (0, 5, (1, 1)), (0, 6, (1, 1))))
    assert env.place(0) and env.start[0] == 0
    # Resource 0 is full for steps 0..14: the 5-step job starts at 15 = time_horizon - len, which the reference's
    # range(0, time_horizon - len) never tries; the 6-step job fits nowhere.
    assert env.place(1) and env.start[1] == 15 and env.finish[1] == 20
    assert not env.placeable(2) and not env.place(2)
    assert env.time == 0  # placements do not move time
    assert env.free[:15, 0].tolist() == [0] * 15 and env.free[15:, 0].tolist() == [9] * 5


def test_a_void_an_empty_slot_and_a_misfit_each_advance_one_step() -> None:
    env = JobsEnv(DEFAULT, jobs((0, 15, (10, 1)), (0, 6, (1, 1))))
    assert env.act(0) and env.time == 0
    assert not env.act(1) and env.time == 1  # fits nowhere: resource 0 is full for the next 14 steps
    assert not env.act(5) and env.time == 2  # an empty slot
    assert not env.act(DEFAULT.void) and env.time == 3
    assert env.free[:12, 0].tolist() == [0] * 12 and env.free[12:, 0].tolist() == [10] * 8


def test_a_placed_jobs_slot_is_refilled_from_the_backlogs_head() -> None:
    s = JobsScenario(num_nw=1, backlog_size=20)
    env = JobsEnv(s, jobs((0, 1, (1, 1)), (1, 2, (1, 1)), (2, 3, (1, 1))))
    env.advance()
    env.advance()
    assert [job.id for job in env.backlog] == [1, 2]
    assert env.place(0)
    assert env.slots[0] is env.jobs[1] and [job.id for job in env.backlog] == [2]


def test_5_every_job_whose_finish_time_has_come_leaves_the_machine() -> None:
    env = JobsEnv(DEFAULT, jobs((0, 2, (1, 1)), (0, 2, (1, 1)), (0, 5, (1, 1))))
    assert env.place(0) and env.place(1) and env.place(2)
    env.advance()
    env.advance()  # time 2: the two 2-step jobs finish together; the reference would keep the second
    assert [job.id for job in env.running] == [2]
    assert env.rewards == [-(1 / 2 + 1 / 2 + 1 / 5), -1 / 5]


def test_the_rewards_are_one_per_step_counting_every_job_in_the_system_and_a_copy_each_time() -> None:
    # Computed when asked, from who was in the system after each step: a job on the machine, one in a slot and one
    # in the backlog all count; asking again, or after more steps, gives the same earlier rewards.
    s = JobsScenario(num_nw=1)
    env = JobsEnv(s, jobs((0, 3, (1, 1)), (0, 4, (1, 1)), (0, 5, (1, 1))))
    assert env.place(0) and [job.id for job in env.slots] == [1] and [job.id for job in env.backlog] == [2]
    env.advance()
    first = env.rewards
    assert first == [-(1 / 3 + 1 / 4 + 1 / 5)]
    first.append(0.0)  # a copy: writing to it changes nothing
    assert env.place(0)
    env.advance()
    assert env.rewards == [-(1 / 3 + 1 / 4 + 1 / 5), -(1 / 3 + 1 / 4 + 1 / 5)] and len(env.rewards) == env.time


def test_6_arrivals_beyond_a_full_backlog_are_dropped_and_counted() -> None:
    s = JobsScenario(num_nw=1, backlog_size=20, simu_len=30)
    env = JobsEnv(s, jobs(*((t, 1, (1, 1)) for t in range(30))))
    for _ in range(29):
        env.advance()
    assert len(env.backlog) == 20 and [job.arrival for job in env.dropped] == list(range(21, 30))
    while not env.done:
        env.act(0)
    metrics = episode_metrics(env)
    assert metrics.jobs_dropped == 9.0
    assert len(env.entered) == 21 and set(env.finish) == {job.id for job in env.entered}


def test_7_an_episode_ends_when_every_job_has_finished() -> None:
    for seed in range(5):
        run_env = JobsEnv(DEFAULT, draw_jobs(DEFAULT, np.random.RandomState(seed)))
        while not run_env.done:
            view = JobsView(DEFAULT, run_env.payload())
            choice = TRACK.baseline("SJF")(view, random.Random(0))
            run_env.act(DEFAULT.void if choice is None else choice)
        assert set(run_env.finish) == {job.id for job in run_env.jobs}
        assert run_env.time >= max(run_env.finish.values())


def test_8_a_void_that_would_wait_for_nothing_is_refused() -> None:
    s = JobsScenario(simu_len=3)
    env = JobsEnv(s, jobs((0, 1, (1, 1))))
    assert check_reply(env, None, 0) == s.void  # arrivals may still come
    env.advance()
    env.advance()
    assert env.time == 2 and not env.running and env.void_allowed() is False
    with pytest.raises(PolicyError) as exc:
        check_reply(env, None, 7)
    assert str(exc.value) == (
        "step 7: policy returned void at time 2, with no arrival ahead and nothing running: a void would wait for "
        "nothing; place a job"
    )
    with pytest.raises(PolicyError) as exc:
        check_reply(env, 4, 7)
    assert str(exc.value).startswith("step 7: policy returned slot 4 (empty or fits nowhere, so a void) at time 2")
    assert check_reply(env, 0, 7) == 0
    assert JobsView(s, env.payload()).mask() == [True] + [False] * 10


def test_8_a_policy_that_always_voids_ends_its_episode_with_an_invalid_action() -> None:
    def always_void(env: JobsView, rng: random.Random) -> None:
        return None

    with pytest.raises(PolicyError, match="a void would wait for nothing"):
        TRACK.run_episode(DEFAULT, always_void, seeded(0), random.Random(0))


def test_9_a_decision_is_asked_only_when_some_job_can_be_placed() -> None:
    seen: list[list[bool]] = []

    def recording(env: JobsView, rng: random.Random) -> int | None:
        seen.append(env.mask())
        return TRACK.baseline("Random")(env, rng)

    run = TRACK.run_episode(DEFAULT, recording, seeded(1), random.Random(1))
    assert len(seen) == len(run.actions) > 0
    assert all(any(mask[:-1]) for mask in seen)


@pytest.mark.parametrize("reply", [1.0, "0", True, [0]], ids=["float", "str", "bool", "list"])
def test_a_reply_that_is_not_a_slot_is_refused_naming_it(reply: object) -> None:
    env = JobsEnv(DEFAULT, jobs((0, 1, (1, 1))))
    with pytest.raises(PolicyError) as exc:
        check_reply(env, reply, 3)
    assert str(exc.value) == (
        f"step 3: policy returned {reply!r} of type {type(reply).__name__}, expected a slot index 0..9 or None for void"
    )


class _Lying(int):
    def __index__(self) -> int:
        return 3


class _NotAnInt:
    def __index__(self) -> float:
        return 2.5


def test_a_reply_is_read_as_the_wire_encodes_it() -> None:
    # operator.index, as the sandbox's wire: an int subclass is its int value whatever its __index__ says, and an
    # __index__ that returns no int is refused, naming the reply (in-process as on the server).
    env = JobsEnv(DEFAULT, jobs((0, 1, (1, 1))))
    assert check_reply(env, _Lying(0), 0) == 0
    with pytest.raises(PolicyError, match=r"^step 4: policy returned .*_NotAnInt.* whose __index__ fails: "):
        check_reply(env, _NotAnInt(), 4)


def test_12_none_and_num_nw_are_void_and_numpy_ints_are_slots() -> None:
    env = JobsEnv(DEFAULT, jobs((0, 1, (1, 1))))
    assert check_reply(env, None, 0) == check_reply(env, 10, 0) == 10
    assert check_reply(env, np.int64(3), 0) == 3
    with pytest.raises(PolicyError) as exc:
        check_reply(env, 11, 0)
    assert str(exc.value) == "step 0: policy returned slot 11, outside 0..9 (None or 10 for void)"


def test_13_an_episode_without_jobs_has_slowdown_one() -> None:
    env = JobsEnv(JobsScenario(simu_len=1), [])
    assert env.done
    metrics = episode_metrics(env)
    assert (metrics.mean_slowdown, metrics.mean_completion, metrics.jobs_dropped) == (1.0, 0.0, 0.0)


def test_metrics_are_computed_from_the_finish_times() -> None:
    s = JobsScenario(simu_len=2)
    env = JobsEnv(s, jobs((0, 2, (10, 1)), (1, 4, (10, 2))))
    assert env.place(0)
    env.advance()  # job 1 arrives at 1 and fits only from step 2
    assert env.place(0) and env.start[1] == 2
    while not env.done:
        env.advance()
    m = episode_metrics(env)
    assert (env.finish[0], env.finish[1]) == (2, 6)
    assert m.mean_completion == (2 + 5) / 2
    assert m.mean_slowdown == (1.0 + 5 / 4) / 2
    assert (m.utilisation_1, m.utilisation_2) == ((2 * 10 + 4 * 10) / 60, (2 * 1 + 4 * 2) / 60)


def test_11_the_image_has_deeprms_layout() -> None:
    s = JobsScenario(num_nw=2)
    env = JobsEnv(s, jobs((0, 3, (4, 1)), (1, 2, (2, 5))))
    assert env.place(0)
    env.advance()
    image = JobsView(s, env.payload()).observe()
    assert image.shape == (20, image_width(s)) == (20, (10 + 10 * 2) * 2 + 3 + 1)
    # Resource 0: the machine (2 more steps of 4 units), then slot 0's job (2 steps of 2), slot 1 empty.
    assert image[:, :10].sum() == 8 and image[:2, :4].all()
    assert image[:2, 10:12].all() and image[:, 10:30].sum() == 4
    # Resource 1 starts at column 30: the machine's 1 unit for 2 steps, slot 0's 5 units for 2 steps.
    assert image[:, 30:40].sum() == 2 and image[:2, 40:45].all() and image[:, 40:60].sum() == 10
    assert image[:, 60:63].sum() == 0  # empty backlog
    assert (image[:, 63] == 0.0).all()  # a job arrived this step


def test_the_image_draws_the_backlog_row_by_row_and_the_steps_since_an_arrival() -> None:
    s = JobsScenario(num_nw=1, backlog_size=20)
    env = JobsEnv(s, jobs(*((t, 1, (1, 1)) for t in range(6))))
    for _ in range(8):
        env.advance()
    view = JobsView(s, env.payload())
    assert view.backlog == 5 and view.since_new_job == 3
    column = image_width(s) - 2  # backlog_width 1: one column, five rows
    image = view.observe()
    assert image[:, column].tolist() == [1.0] * 5 + [0.0] * 15
    assert image[0, -1] == pytest.approx(0.3)


def test_the_same_episode_twice_makes_the_same_trace() -> None:
    for name in TRACK.baseline_names:
        first = TRACK.run_episode(DEFAULT, TRACK.baseline(name), seeded(4), random.Random(9))
        again = TRACK.run_episode(DEFAULT, TRACK.baseline(name), seeded(4), random.Random(9))
        assert first == again


def test_the_views_mask_is_the_environments_own_rule() -> None:
    # The view knows only the present (free units, visible jobs, time); its mask must still be the env's verdict,
    # and where a job is placed, at the offset the view's search finds.
    # The env keeps its offsets across placements and steps (place and advance): every one of them, not only the
    # mask's verdict, must be what the view's fresh search finds.
    rng = random.Random(2)
    for seed, rate in itertools.product(range(4), (0.3, 0.7, 1.0)):
        scenario = JobsScenario(new_job_rate=rate)
        env = JobsEnv(scenario, draw_jobs(scenario, np.random.RandomState(seed)))
        while not env.done:
            view = JobsView(scenario, env.payload())
            mask = view.mask()
            assert mask == [env.placeable(i) for i in range(DEFAULT.num_nw)] + [env.void_allowed()]
            kept = [None if job is None else env._offset(job) for job in env.slots]
            assert kept == [view.start_offset(i) for i in range(DEFAULT.num_nw)], (seed, rate, env.time)
            choices = [i for i, ok in enumerate(mask) if ok]
            action = rng.choice(choices)
            job, offset, time = env.slots[action] if action < DEFAULT.num_nw else None, None, env.time
            if job is not None:
                offset = view.start_offset(action)
            env.act(action)
            if job is not None:  # the env's offset (kept across steps, see _not_before) is a fresh search's
                assert env.start[job.id] == time + offset
