"""The jobs-v1 track object (issue 19): registered, with every part of the interface; its baselines' rules (fits
now, the lowest slot on a tie, Random over allowed actions); its scenarios in evaluation-set files and on the wire."""

from __future__ import annotations

import operator
import random
from collections.abc import Callable
from dataclasses import fields
from itertools import pairwise
from typing import Any

import numpy as np
import pytest

from layersched.sim.episodes import EpisodeSpec
from layersched.sim.errors import EvalSetError, PolicyError
from layersched.sim.tracks import get_track, track_ids, track_module
from layersched.sim.tracks.interface import Track
from layersched.sim.tracks.jobs_v1 import baselines
from layersched.sim.tracks.jobs_v1.env import JobsEnv
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario
from layersched.sim.tracks.jobs_v1.view import JobsView
from layersched.sim.tracks.jobs_v1.workload import Job
from layersched.sim.tracks.play import play_episode

TRACK = get_track("jobs-v1")
DEFAULT = JobsScenario()


def view_of(*specs: tuple[int, tuple[int, int]], placed: tuple[tuple[int, tuple[int, int]], ...] = ()) -> JobsView:
    """A view at time 0 whose machine holds ``placed`` (length, demand) and whose slots 0.. hold ``specs``."""
    # All arrive at time 0, ``specs`` first: they fill slots 0.., and placing the rest leaves those slots empty.
    assert len(specs) + len(placed) <= DEFAULT.num_nw, "a slot's job would come from the backlog"
    env = JobsEnv(DEFAULT, [Job(i, 0, length, demand) for i, (length, demand) in enumerate(specs + placed)])
    for i in range(len(specs), len(specs) + len(placed)):
        assert env.place(i)
    return JobsView(DEFAULT, env.payload())


def test_the_track_is_registered_with_all_of_the_interface() -> None:
    assert "jobs-v1" in track_ids() and track_module("jobs-v1") == "layersched.sim.tracks.jobs_v1"
    assert (TRACK.reference_baseline, TRACK.primary_metric) == ("SJF", "mean_slowdown")
    assert TRACK.baseline_names == ("SJF", "Packer", "Tetris*", "Random")
    assert [spec.name for spec in TRACK.metric_specs] == [
        f.name
        for f in fields(
            TRACK.run_episode(
                DEFAULT, TRACK.baseline("SJF"), EpisodeSpec("e", seed=0).workload_rng(), random.Random(0)
            ).metrics
        )
    ]
    assert TRACK.policy_arguments == "(env, rng)" and TRACK.contract.startswith("policy(env, rng) -> int | None")
    for name in dir(Track):
        if not name.startswith("_"):
            assert hasattr(TRACK, name), name
    with pytest.raises(KeyError, match="unknown jobs-v1 baseline 'FIFO'; known: SJF, Packer, Tetris\\*, Random"):
        TRACK.baseline("FIFO")


def test_sjf_takes_the_shortest_job_that_fits_now_and_the_lowest_slot_on_a_tie() -> None:
    # The machine holds 8 units of resource 0 for 15 steps: a job needing 3 of it does not fit now.
    view = view_of((5, (3, 1)), (1, (1, 2)), (3, (1, 1)), (1, (2, 1)), (1, (3, 1)), placed=((15, (8, 1)),))
    assert [view.fits_now(i) for i in range(5)] == [False, True, True, True, False]
    assert baselines.sjf(view, random.Random(0)) == 1


def test_packer_takes_the_best_aligned_job_and_the_lowest_slot_on_a_tie() -> None:
    view = view_of((1, (1, 2)), (2, (2, 1)), (3, (5, 1)), (4, (1, 5)))
    # free[0] = (10, 10): alignments 30, 30, 60, 60.
    assert baselines.packer(view, random.Random(0)) == 2


def test_tetris_weighs_alignment_and_length_with_its_knob() -> None:
    knob = baselines.TETRIS_KNOB
    view = view_of((10, (10, 2)), (2, (5, 1)), (3, (6, 2)))
    scores = [knob * baselines.alignment(view, job) + (1 - knob) / job.length for job in view.slots if job]
    assert baselines.tetris(view, random.Random(0)) == int(np.argmax(scores)) == 1
    assert baselines.packer(view, random.Random(0)) == 0 and baselines.sjf(view, random.Random(0)) == 1


def test_a_heuristic_with_nothing_that_fits_now_voids() -> None:
    view = view_of((2, (5, 1)), placed=((15, (8, 1)),))
    for name in ("SJF", "Packer", "Tetris*"):
        assert TRACK.baseline(name)(view, random.Random(0)) is None


def test_random_picks_only_allowed_actions_and_each_of_them() -> None:
    # Slot 0 fits only later (a reservation), slot 1 now, slot 2 never; void is allowed at time 0.
    view = view_of((10, (5, 1)), (1, (1, 1)), (20, (5, 1)), placed=((10, (8, 1)),))
    assert view.mask() == [True, True, False] + [False] * 7 + [True]
    rng = random.Random(5)
    picks = {baselines.random_allowed(view, rng) for _ in range(200)}
    assert picks == {0, 1, None}


@pytest.mark.parametrize(
    ("table", "scenario"),
    [
        ({}, JobsScenario()),
        ({"new_job_rate": 1}, JobsScenario(new_job_rate=1.0)),
        ({"new_job_rate": 0.3, "simu_len": 200, "num_nw": 5}, JobsScenario(new_job_rate=0.3, simu_len=200, num_nw=5)),
    ],
    ids=["defaults", "int-rate", "several"],
)
def test_a_scenario_table_reads_back_from_its_dump(table: dict[str, float], scenario: JobsScenario) -> None:
    parsed, source = TRACK.parse_scenario(table, "scenario 's'", None)
    assert (parsed, source) == (scenario, None)
    assert isinstance(parsed.new_job_rate, float)
    again, _ = TRACK.parse_scenario(TRACK.dump_scenario(_entry(parsed)), "scenario 's'", None)
    assert again == parsed and TRACK.scenario_hash(again) == TRACK.scenario_hash(parsed)
    wired = TRACK.scenario_from_wire(TRACK.scenario_to_wire(parsed))
    assert wired == parsed and TRACK.scenario_hash(wired) == TRACK.scenario_hash(parsed)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"new_job_rate": "fast"}, "scenario 's': new_job_rate must be a finite number, got 'fast'"),
        ({"new_job_rate": 2.0}, "scenario 's': new_job_rate must be in (0, 1], got 2.0"),
        ({"simu_len": 1.5}, "scenario 's': simu_len must be an integer >= 1, got 1.5"),
    ],
    ids=["rate-not-a-number", "rate-too-high", "length-not-an-int"],
)
def test_a_bad_scenario_table_is_refused_naming_the_value(table: dict[str, object], message: str) -> None:
    with pytest.raises(EvalSetError) as exc:
        TRACK.parse_scenario(table, "scenario 's'", None)
    assert str(exc.value) == message


def _entry(scenario: JobsScenario) -> object:
    class Entry:
        pass

    entry = Entry()
    entry.scenario = scenario  # type: ignore[attr-defined]
    return entry


def test_run_policies_plays_each_policy_on_the_episode_run_episode_plays() -> None:
    spec = EpisodeSpec("e", seed=3)
    names = TRACK.baseline_names
    together = TRACK.run_policies(DEFAULT, [(TRACK.baseline(n), random.Random(1)) for n in names], spec.workload_rng())
    for name, run in zip(names, together, strict=True):
        assert run == TRACK.run_episode(DEFAULT, TRACK.baseline(name), spec.workload_rng(), random.Random(1))


def test_the_sandboxs_two_sides_hand_the_policy_only_the_payloads_view() -> None:
    seen: list[JobsView] = []

    def recording(env: JobsView, rng: random.Random) -> int | None:
        seen.append(env)
        return baselines.sjf(env, rng)

    spec = EpisodeSpec("e", seed=2)
    actions, metrics = play_episode(
        TRACK.simulator(DEFAULT), TRACK.replica(DEFAULT), recording, spec.workload_rng(), random.Random(0)
    )
    assert (tuple(actions), metrics) == (
        TRACK.run_episode(DEFAULT, baselines.sjf, spec.workload_rng(), random.Random(0)).actions,
        metrics,
    )
    assert len({id(view) for view in seen}) == len(seen)  # a fresh view per decision


def test_free_is_built_on_first_use_from_the_payloads_units() -> None:
    view = view_of((2, (3, 4)), placed=((3, (6, 2)),))
    assert "free" not in vars(view)
    assert view.free_units() == (4, 8) * 3 + (10, 10) * 17
    assert view.free_row(0) == [4, 8] and view.free_row(19) == [10, 10]
    free = view.free
    assert free.dtype == np.int64 and free.shape == (20, 2) and free.ravel().tolist() == list(view.free_units())
    assert view.free is free and (view.used == 10 - free).all()


def test_the_views_helpers_answer_for_free_as_the_policy_wrote_it() -> None:
    # A policy may write to its view (it is fresh per decision) and ask the helpers about the state it made.
    view = view_of((2, (3, 4)), (1, (10, 10)))
    assert (view.fits_now(0), view.start_offset(1), view.free_row(0)) == (True, 0, [10, 10])
    view.free[:2] -= np.array([8, 0])  # as if a job of length 2 and demand (8, 0) were placed
    assert (view.fits_now(0), view.start_offset(0), view.start_offset(1), view.free_row(1)) == (False, 2, 2, [2, 10])
    assert view.mask()[:3] == [True, True, False] and baselines.sjf(view, random.Random(0)) is None
    view.free[:] = 0
    assert view.start_offset(0) is None and view.free_row(19) == [0, 0]


@pytest.mark.parametrize("offset", [-1, 20])
def test_free_row_refuses_an_offset_outside_the_horizon(offset: int) -> None:
    with pytest.raises(IndexError, match=rf"^offset {offset} is outside the horizon 0\.\.19$"):
        view_of().free_row(offset)


def test_a_replica_shares_a_waiting_jobs_visible_job_between_views_and_starts_each_episode_afresh() -> None:
    replica = TRACK.replica(DEFAULT)

    def views_of_an_episode() -> list[JobsView]:
        seen: list[JobsView] = []

        def recording(env: JobsView, rng: random.Random) -> int | None:
            seen.append(env)
            return baselines.sjf(env, rng)

        workload = EpisodeSpec("e", seed=2).workload_rng()
        play_episode(TRACK.simulator(DEFAULT), replica, recording, workload, random.Random(0))
        return seen

    def held(view: JobsView) -> list[object]:
        return [job for job in view.slots if job is not None]

    def same(job: object, jobs: list[object]) -> bool:
        return any(job is other for other in jobs)

    first = views_of_an_episode()
    waiting = [(job, held(before)) for before, after in pairwise(first) for job in held(after) if job in held(before)]
    assert waiting and all(same(job, before) for job, before in waiting)  # equal: the same object
    again = views_of_an_episode()  # the same episode: equal jobs, none of them an object of the first
    assert held(again[0]) == held(first[0]) != [] and not any(same(job, held(first[0])) for job in held(again[0]))


def test_check_policy_names_a_float_reply() -> None:
    def floats(env: JobsView, rng: random.Random) -> float:
        return 0.0

    with pytest.raises(PolicyError) as exc:
        TRACK.check_policy(floats, DEFAULT)
    assert str(exc.value) == (
        "step 0: policy returned 0.0 (float); return an int slot such as int(np.argmax(scores)), or None for void"
    )
    TRACK.check_policy(baselines.sjf, DEFAULT)


def test_the_starter_kit_is_the_tracks_own_and_its_policy_is_sjf() -> None:
    from importlib import resources

    package, folder = TRACK.starter
    kit = resources.files(package).joinpath(folder)
    assert sorted(f.name for f in kit.iterdir() if f.name.endswith((".py", ".md"))) == [
        "README.md",
        "policy.py",
        "train.py",
    ]
    # Without weights (the kit ships none: train.py writes them), policy.py is SJF.
    namespace: dict[str, object] = {"__file__": str(kit.joinpath("policy.py"))}
    exec(kit.joinpath("policy.py").read_text(encoding="utf-8"), namespace)
    TRACK.check_policy(namespace["policy"], DEFAULT)
    for seed in range(3):
        spec = EpisodeSpec("e", seed=seed)
        kit_run = TRACK.run_episode(DEFAULT, namespace["policy"], spec.workload_rng(), random.Random(0))
        assert kit_run == TRACK.run_episode(DEFAULT, baselines.sjf, spec.workload_rng(), random.Random(0))


def test_tetris_knob_is_the_best_of_its_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    # The claim beside TETRIS_KNOB: the lowest mean slowdown of the sweep, seeds 0-9 at rates 0.3, 0.5 and 0.7.
    def mean_slowdown(knob: float | None) -> float:
        if knob is not None:
            monkeypatch.setattr(baselines, "TETRIS_KNOB", knob)
        values = [
            TRACK.run_episode(
                JobsScenario(new_job_rate=rate),
                baselines.sjf if knob is None else baselines.tetris,
                EpisodeSpec("e", seed=seed).workload_rng(),
                random.Random(0),
            ).metrics.mean_slowdown
            for rate in (0.3, 0.5, 0.7)
            for seed in range(10)
        ]
        return sum(values) / len(values)

    chosen = baselines.TETRIS_KNOB
    assert round(mean_slowdown(None), 2) == 3.15  # SJF
    sweep = {knob: mean_slowdown(knob) for knob in (0.5, 0.1, 0.05, 0.01, 0.003, 0.001, 0.0003, 0.0001)}
    assert chosen == 0.001 and min(sweep, key=sweep.__getitem__) == chosen
    assert [round(v, 2) for v in sweep.values()] == [6.19, 5.96, 5.06, 3.13, 3.08, 3.0, 3.01, 3.01]


def test_an_episodes_jobs_are_drawn_by_its_first_decision_not_before() -> None:
    class Counting(random.Random):
        draws = 0

        def getrandbits(self, k: int) -> int:
            self.draws += 1
            return super().getrandbits(k)

    workload = Counting(7)
    episode = TRACK.simulator(DEFAULT).episode(workload)
    assert episode.start_message() == {} and workload.draws == 0
    assert episode.first_decision() is not None and workload.draws == 8  # the RandomState's seed words


@pytest.mark.parametrize(
    "vandalise",
    [
        lambda s: object.__setattr__(s, "num_nw", 0),
        lambda s: object.__setattr__(s, "new_job_rate", 0.5),
        lambda s: object.__setattr__(s, "__class__", type("Fake", (JobsScenario,), {"num_nw": 3})),
    ],
    ids=["an-int-field", "a-float-field", "its-class"],
)
def test_a_forced_write_into_a_views_scenario_reaches_no_later_view(vandalise: Callable[[Any], None]) -> None:
    # The views of an episode share one copy of the scenario while it is intact; once a policy forces a write into
    # it, the next view has a new copy, equal to the replica's own.
    scenarios: list[Any] = []

    def vandal(env: JobsView, rng: random.Random) -> int | None:
        scenarios.append(env.scenario)
        action = baselines.sjf(env, rng)
        if len(scenarios) == 3:
            vandalise(env.scenario)
        return action

    workload = EpisodeSpec("e", seed=2).workload_rng()
    actions, _ = play_episode(TRACK.simulator(DEFAULT), TRACK.replica(DEFAULT), vandal, workload, random.Random(0))
    sjf_actions, _ = play_episode(
        TRACK.simulator(DEFAULT),
        TRACK.replica(DEFAULT),
        baselines.sjf,
        EpisodeSpec("e", seed=2).workload_rng(),
        random.Random(0),
    )
    assert actions == sjf_actions
    assert scenarios[0] is scenarios[1] is scenarios[2] is not scenarios[3] is scenarios[4]
    assert type(scenarios[3]) is JobsScenario and scenarios[3] == DEFAULT and scenarios[2] != DEFAULT


def test_a_write_into_the_views_scenario_at_any_time_reaches_no_later_view() -> None:
    # Whenever the policy writes (during its decision and then raising, in its reply's __index__, which runs after
    # the decision, or by deleting a field), the next view is built from an intact copy.
    replica = TRACK.replica(DEFAULT)
    episode = TRACK.simulator(DEFAULT).episode(EpisodeSpec("e", seed=2).workload_rng())
    replica.start(episode.start_message())
    payload = episode.first_decision()
    seen: list[JobsView] = []

    def next_view() -> JobsView:
        replica.decide(lambda env, rng: seen.append(env), payload, 0, random.Random(0))
        return seen[-1]

    def vandal(env: JobsView, rng: random.Random) -> int | None:
        object.__setattr__(env.scenario, "num_nw", 0)
        raise RuntimeError("after the write")

    with pytest.raises(RuntimeError, match="after the write"):
        replica.decide(vandal, payload, 0, random.Random(0))
    assert next_view().scenario == DEFAULT and len(seen[-1].slots) == DEFAULT.num_nw

    class Writes:
        def __init__(self, scenario: object) -> None:
            self.scenario = scenario

        def __index__(self) -> int:
            object.__setattr__(self.scenario, "res_slot", 3)
            return 0

    reply = replica.decide(lambda env, rng: Writes(env.scenario), payload, 0, random.Random(0))
    assert operator.index(reply) == 0 and seen[-1].scenario.res_slot == 3  # written after that decision
    assert next_view().scenario == DEFAULT

    object.__delattr__(next_view().scenario, "res_slot")
    assert next_view().scenario == DEFAULT and next_view().scenario.res_slot == DEFAULT.res_slot
