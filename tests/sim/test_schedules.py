"""Schedule replays and their drawings (``layersched.sim.tracks.schedules``, each track's ``schedules``).

For each track that draws schedules: the replay of a run's accepted actions reproduces its trace hash and its
metrics; every task or job has one bar on the machine it ran on, at the times it ran (read back from the SVG's
geometry); the stored actions' encoding round-trips within its bounds; a replay refuses actions that are not the
recorded run's.
"""

from __future__ import annotations

import random
import re
import zlib
from pathlib import Path
from typing import Any

import pytest

from layersched.sim.episodes import EpisodeSpec, SeededRandom, trace_hash
from layersched.sim.evalset import evalset_file, load_evalset
from layersched.sim.tracks import get_track
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario
from layersched.sim.tracks.layers_v1.scenario import Scenario
from layersched.sim.tracks.schedules import (
    MAX_STORED_ACTIONS,
    MAX_STORED_BYTES,
    ReplayError,
    decode_actions,
    encode_actions,
    public_workload,
    replay_episode,
    schedule_views,
)
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario
from tests.sim.schedule_svg import at_times, bars, marks, titles, tolerance

# (track, scenario, baselines to run, seed): small episodes, each with a baseline that waits or holds jobs back.
CASES = [
    ("layers-v1", Scenario(n_tasks=80), ("Greedy", "Random", "Dep", "LeastLoaded"), 2),
    ("jobs-v1", JobsScenario(simu_len=60), ("SJF", "Random", "Tetris*"), 4),
    ("workflows-v1", WorkflowScenario(n_workflows=4), ("HEFT", "FCFS", "Random"), 2),
]
IDS = [case[0] for case in CASES]


def _run(track_id: str, scenario: Any, baseline: str, seed: int) -> Any:
    track = get_track(track_id)
    return track.run_episode(scenario, track.baseline(baseline), SeededRandom(seed), random.Random(seed))


@pytest.mark.parametrize(("track_id", "scenario", "baselines", "seed"), CASES, ids=IDS)
def test_a_replay_reproduces_the_runs_trace_and_metrics(
    track_id: str, scenario: Any, baselines: Any, seed: int
) -> None:
    track = get_track(track_id)
    for name in baselines:
        run = _run(track_id, scenario, name, seed)
        record = replay_episode(track, scenario, seed, run.actions, expected_hash=trace_hash(run.actions))
        assert record.actions == run.actions, name
        assert trace_hash(record.actions) == trace_hash(run.actions), name
        assert record.metrics == run.metrics, name
        again = replay_episode(track, scenario, seed, run.actions, expected_hash=None)
        assert again == record, f"{name}: the same actions give the same schedule"


@pytest.mark.parametrize(("track_id", "scenario", "baselines", "seed"), CASES, ids=IDS)
def test_a_prefix_replays_the_episode_so_far(track_id: str, scenario: Any, baselines: Any, seed: int) -> None:
    run = _run(track_id, scenario, baselines[0], seed)
    cut = run.actions[: len(run.actions) // 2]
    record = replay_episode(get_track(track_id), scenario, seed, cut, expected_hash=trace_hash(cut))
    assert record.metrics is None
    assert record.actions == cut


@pytest.mark.parametrize(("track_id", "scenario", "baselines", "seed"), CASES, ids=IDS)
def test_a_replay_refuses_what_is_not_the_recorded_run(track_id: str, scenario: Any, baselines: Any, seed: int) -> None:
    track = get_track(track_id)
    run = _run(track_id, scenario, baselines[0], seed)
    with pytest.raises(ReplayError, match=r"^the \d+ stored actions hash to [0-9a-f]{12}, not to the recorded trace"):
        replay_episode(track, scenario, seed, run.actions, expected_hash=trace_hash(run.actions[:-1]))
    too_many = (*run.actions, run.actions[-1])
    with pytest.raises(ReplayError, match=r"the episode ended after \d+ decisions, \d+ actions were given"):
        replay_episode(track, scenario, seed, too_many, expected_hash=None)
    bad = (*run.actions[:3], 10_000, *run.actions[4:])
    with pytest.raises(ReplayError, match=r"^the simulator refuses a stored action \(step 3: .*10000"):
        replay_episode(track, scenario, seed, bad, expected_hash=None)


def test_a_track_without_schedules_still_works_and_says_it_draws_none() -> None:
    from tests.toy_track import TRACK as toy

    assert schedule_views(toy) is None
    with pytest.raises(ReplayError, match=r"^track 'toy-v1' draws no schedules$"):
        replay_episode(toy, None, 0, (), expected_hash=None)


def _time(text: str, name: str) -> float:
    found = re.search(rf"{name} ([0-9.]+)", text)
    assert found, (name, text)
    return float(found.group(1))


def test_jobs_svg_has_one_bar_per_job_at_its_times_and_its_units_on_each_resource() -> None:
    track, scenario = get_track("jobs-v1"), JobsScenario(simu_len=60)
    views = schedule_views(track)
    assert views is not None
    policy = replay_episode(track, scenario, 4, _run("jobs-v1", scenario, "Random", 4).actions, expected_hash=None)
    reference = replay_episode(track, scenario, 4, _run("jobs-v1", scenario, "SJF", 4).actions, expected_hash=None)
    figures = {f.key: f for f in views.figures(policy, reference, ("mine", "SJF"))}
    assert set(figures) == {"occupancy", "jobs", "queue", "slowdown"}
    life = figures["jobs"].svg
    eps = tolerance(life)
    for panel, record in (("mine", policy), ("SJF", reference)):
        runs = [b for b in bars(life) if b.panel == panel and b.kind == "run"]
        placed = [job for job in record.jobs if job.start is not None]
        assert len(runs) == len(placed) > 0, "one running bar per placed job"
        for bar, job in zip(runs, placed, strict=True):
            assert bar.lane == f"job {job.id}" and bar.title.startswith(f"job {job.id}: ")
            assert at_times(bar, job.start, job.finish, life), (bar, job)
        held = [b for b in bars(life) if b.panel == panel and b.kind == "hold"]
        assert sum(round(b.end - b.start) for b in held) == sum(len(job.held) for job in record.jobs)
    assert any(job.held for job in policy.jobs), "Random holds jobs back: the case shows red bars"
    # The occupancy image: each job covers length x demand units of each resource, and never beyond its run.
    occupancy = figures["occupancy"].svg
    eps = tolerance(occupancy)
    for r in range(scenario.num_res):
        lane = f"resource {r + 1}"
        for job in policy.jobs:
            if job.start is None:
                continue
            pieces = [
                b
                for b in bars(occupancy)
                if b.panel == "mine" and b.lane == lane and b.title.startswith(f"job {job.id}: ")
            ]
            area = sum((b.end - b.start) * round((b.height + 1) / 10) for b in pieces)
            assert abs(area - job.length * job.demand[r]) <= eps * 10 * job.demand[r], (job, pieces)
            assert all(b.start >= job.start - eps and b.end <= job.finish + eps for b in pieces)
    cdf_titles = titles(figures["slowdown"].svg)
    assert any(t.startswith("mine: ") for t in cdf_titles) and any(t.startswith("SJF: ") for t in cdf_titles)


def test_layers_svg_has_one_bar_per_task_on_its_node_at_its_times_and_marks_its_cache_hits() -> None:
    track, scenario = get_track("layers-v1"), Scenario(n_tasks=80)
    views = schedule_views(track)
    assert views is not None
    policy = replay_episode(track, scenario, 2, _run("layers-v1", scenario, "Dep", 2).actions, expected_hash=None)
    reference = replay_episode(track, scenario, 2, _run("layers-v1", scenario, "Greedy", 2).actions, expected_hash=None)
    figures = {f.key: f for f in views.figures(policy, reference, ("mine", "Greedy"))}
    assert set(figures) == {"nodes", "downloads", "storage", "completion"}
    svg = figures["nodes"].svg
    for panel, record in (("mine", policy), ("Greedy", reference)):
        drawn: dict[int, list[Any]] = {}
        for bar in bars(svg):
            if bar.panel == panel:
                found = re.match(r"task (\d+) \(", bar.title)
                assert found, bar.title
                drawn.setdefault(int(found.group(1)), []).append(bar)
        assert sorted(drawn) == [t.index for t in record.tasks], "every task, once"
        for task in record.tasks:
            by_kind = {b.kind: b for b in drawn[task.index]}
            assert len(by_kind) == len(drawn[task.index]), "one bar of each kind per task"
            assert {b.lane for b in drawn[task.index]} == {f"node {task.node}"}
            assert at_times(by_kind["run"], task.start, task.finish, svg), (task, by_kind["run"])
            if task.ready > task.arrival:
                assert at_times(by_kind["dl"], task.arrival, task.ready, svg)
            if task.start > task.ready:
                assert at_times(by_kind["wait"], task.ready, task.start, svg)
            assert ("cache hit" in by_kind["run"].title) == task.hit
        hits = sorted((f"node {t.node}", t.arrival) for t in record.tasks if t.hit)
        shown = sorted((lane, at) for name, lane, at in marks(svg) if name == panel)
        assert len(shown) == len(hits) > 0, "a triangle per cache hit"
        eps = tolerance(svg)
        assert all(a[0] == b[0] and abs(a[1] - b[1]) <= eps for a, b in zip(shown, hits, strict=True))
    # Each node's free storage at the end is what the simulator's own state says, its evictions counted.
    from layersched.sim.tracks.layers_v1.env import ClusterEnv

    env = ClusterEnv(scenario)
    env.reset(SeededRandom(2))
    for action in policy.actions:
        env.step(action)
    for n, node in enumerate(env.nodes):
        free = 1 - sum(env.size[d] for d in node.layers) / node.storage
        assert policy.storage[n][-1][1] == pytest.approx(free, abs=1e-12), n
    downloaded = sum(t.downloaded_mb for t in policy.tasks)
    assert downloaded == pytest.approx(sum(t.image_mb - t.cached_mb for t in policy.tasks))
    assert sum(t.node == max(range(10), key=[p.node for p in policy.tasks].count) for t in policy.tasks) > 30, (
        "Dep piles tasks onto one node: the lab's question, visible in the schedule"
    )


def test_workflows_svg_has_one_bar_per_task_on_its_vm_at_its_times() -> None:
    track, scenario = get_track("workflows-v1"), WorkflowScenario(n_workflows=4)
    views = schedule_views(track)
    assert views is not None
    policy = replay_episode(track, scenario, 2, _run("workflows-v1", scenario, "FCFS", 2).actions, expected_hash=None)
    reference = replay_episode(
        track, scenario, 2, _run("workflows-v1", scenario, "HEFT", 2).actions, expected_hash=None
    )
    figures = {f.key: f for f in views.figures(policy, reference, ("mine", "HEFT"))}
    assert set(figures) == {"vms", "busy", "completion"}
    svg = figures["vms"].svg
    for panel, record in (("mine", policy), ("HEFT", reference)):
        drawn = {}
        for bar in bars(svg):
            if bar.panel == panel:
                found = re.match(r"workflow (\d+) \(\w+\) task (\d+): ", bar.title)
                assert found, bar.title
                key = (int(found.group(1)), int(found.group(2)))
                assert key not in drawn, f"task {key} has one bar"
                drawn[key] = bar
        assert len(drawn) == len(record.tasks)
        for task in record.tasks:
            bar = drawn[(task.workflow, task.index)]
            assert bar.lane == f"VM {task.vm} {record.cluster.types[task.vm]}"
            assert at_times(bar, task.start, task.finish, svg), (bar, task)
            assert abs(_time(bar.title, "ran") - task.start) < 0.051
        # The tasks of one VM that overlap in time are in different rows (never drawn over each other).
        for a in record.tasks:
            for b in record.tasks:
                bar_a, bar_b = drawn[(a.workflow, a.index)], drawn[(b.workflow, b.index)]
                if a is not b and bar_a.lane == bar_b.lane and bar_a.y == bar_b.y:
                    assert a.finish <= b.start or b.finish <= a.start, (a, b)
    completions = titles(figures["completion"].svg)
    assert sum(t.startswith("workflow ") for t in completions) == len(policy.workflows)


@pytest.mark.parametrize(("track_id", "scenario", "baselines", "seed"), CASES, ids=IDS)
def test_summary_text_and_pixels(track_id: str, scenario: Any, baselines: Any, seed: int) -> None:
    track = get_track(track_id)
    views = schedule_views(track)
    assert views is not None
    record = replay_episode(
        track, scenario, seed, _run(track_id, scenario, baselines[0], seed).actions, expected_hash=None
    )
    summary = views.summary(record)
    assert summary and all(isinstance(label, str) and isinstance(value, str) for label, value in summary)
    text = views.ansi(record, width=60)
    assert text.endswith("\n") and all(len(line) <= 60 for line in text.splitlines()[1:4])
    image = views.rgb_array(record)
    assert image.dtype.name == "uint8" and image.ndim == 3 and image.shape[2] == 3 and image.shape[1] == 640
    assert len({tuple(p) for p in image.reshape(-1, 3)}) > 3, "the image shows bars, not a blank"


def test_stored_actions_round_trip_compactly_within_their_bounds() -> None:
    actions = (0, 1, 127, 128, -1, -2, 2**40, -(2**40), 2**63 - 1, -(2**63))
    assert decode_actions(encode_actions(actions)) == actions
    assert decode_actions(encode_actions(())) == ()
    rng = random.Random(0)
    node_indices = tuple(rng.randrange(10) for _ in range(500))
    assert len(encode_actions(node_indices)) < 300, "a 500-task lab episode's actions take a few hundred bytes"
    with pytest.raises(ValueError, match=rf"^{MAX_STORED_ACTIONS + 1} actions exceed the {MAX_STORED_ACTIONS} kept"):
        encode_actions((0,) * (MAX_STORED_ACTIONS + 1))
    with pytest.raises(ValueError, match=r"^action 9223372036854775808 is outside the 64-bit range kept$"):
        encode_actions((2**63,))
    noise = tuple(rng.getrandbits(62) for _ in range(MAX_STORED_ACTIONS))
    with pytest.raises(ValueError, match=rf"take \d+ bytes, over the {MAX_STORED_BYTES} kept per episode$"):
        encode_actions(noise)


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (b"not deflated", r"^stored actions are damaged: Error -3"),
        (zlib.compress(b"\x80"), r"^stored actions are damaged: the last varint is cut$"),
        (zlib.compress(b"\xff" * 11), r"^stored actions are damaged: a varint longer than 10 bytes at action 0$"),
        (zlib.compress(b"\x00")[:-2], r"^stored actions are damaged: truncated or too long$"),
        (
            zlib.compress(b"\x00" * (10 * MAX_STORED_ACTIONS + 1)),
            r"^stored actions are damaged: truncated or too long$",
        ),
    ],
    ids=["not-zlib", "cut-varint", "long-varint", "truncated", "bomb"],
)
def test_damaged_stored_actions_are_refused_naming_why(blob: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        decode_actions(blob)


@pytest.mark.parametrize("sample", ["sample", "jobs-sample", "workflows-sample"])
def test_the_largest_episode_of_each_shipped_set_fits_the_stored_bounds(sample: str) -> None:
    evalset = load_evalset(evalset_file(sample))
    track = get_track(evalset.track)
    for scenario in evalset.scenarios:
        for name in track.baseline_names:
            run = _run(evalset.track, scenario.scenario, name, scenario.episodes[0].seed or 0)
            assert len(encode_actions(run.actions)) < MAX_STORED_BYTES // 20, (scenario.name, name)


def test_only_seeded_episodes_of_scenarios_without_secrets_have_a_public_workload() -> None:
    evalset = load_evalset(evalset_file("jobs-sample"))
    track = get_track(evalset.track)
    scenario = evalset.scenarios[0]
    assert public_workload(track, scenario, EpisodeSpec("a", seed=3))
    assert public_workload(track, scenario, EpisodeSpec("b", split="private", seed=3)), "a seed is public in any split"
    assert not public_workload(track, scenario, EpisodeSpec("c", key=bytes(16))), "keyed: hidden in any split"
    assert not public_workload(track, scenario, EpisodeSpec("d", split="public", key=bytes(range(16))))


def test_a_tracks_schedules_are_not_its_rules(tmp_path: Path) -> None:
    """Editing the record or the drawing of a track's schedules changes no rules hash (so no lab policy seed); an
    edit anywhere else in the package does."""
    from layersched.sim.version import NOT_RULES, package_rules_hash

    package = tmp_path / "demo_v1"
    package.mkdir()
    (package / "env.py").write_text("RULE = 1\n")
    for name in NOT_RULES:
        (package / name).write_text("DRAWN = 1\n")
    first = package_rules_hash(package)
    for name in NOT_RULES:
        (package / name).write_text("DRAWN = 2  # another colour\n")
    assert package_rules_hash(package) == first
    (package / "nested").mkdir()
    (package / "nested" / "render.py").write_text("RULE = 2\n")  # only the package's own modules are left out
    assert package_rules_hash(package) != first
