"""Benchmark: a replay page on the server (issue 33), per track: the time to build it and its size, against the
evaluation's own time for the same episode.

The page is what ``server.replays.replay_html`` builds: the stored actions decoded and replayed on the trusted
simulator (``episode_report``: trace hash checked), the reference baseline's schedule beside it, the track's
figures and the HTML. Two figures: *reference kept* (the reference baseline's actions read from the database, where
the worker kept them the first time an evaluation recorded the episode: every page of an episode recorded since)
and *run here* (the baseline run by the page: an episode recorded before that, on its first view since the server
started). The worker's side of *kept*, once per episode of a set, is the reference run: about *run here* minus
*kept*. The named reference, in the same run and alternated with the pages: the episode played as the evaluation
plays it, the same policy through the worker's sandbox (process backend, its process started already: the time of
``run_episode`` alone).

Episodes: jobs-v1 at the paper's rate with ``simu_len`` 285 (about 200 jobs; Random as the policy, which holds jobs
back), workflows-v1 with 10 workflows (about 500 tasks; FCFS), and layers-v1's 500-task lab episode where its
track draws schedules. Goals: a page under 100 ms and under 500 kB.

Run: ``python benchmarks/bench_replays.py [--repeats 5] [--track jobs-v1]``
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from layersched.sim.episode_report import episode_report, reference_actions, report_html
from layersched.sim.episodes import EpisodeSpec, SeededRandom, policy_seed, trace_hash
from layersched.sim.tracks import get_track
from layersched.sim.tracks.schedules import decode_actions, encode_actions, schedule_views

POLICY = """from layersched.sim.tracks import get_track

_baseline = get_track({track!r}).baseline({baseline!r})


def policy{arguments}:
    return _baseline{arguments}
"""


def cases() -> list[tuple[str, Any, str, int]]:
    from layersched.sim.tracks.jobs_v1.scenario import JobsScenario
    from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario

    out: list[tuple[str, Any, str, int]] = [
        ("jobs-v1", JobsScenario(simu_len=285), "Random", 3),
        ("workflows-v1", WorkflowScenario(n_workflows=10), "FCFS", 3),
    ]
    layers = get_track("layers-v1")
    if schedule_views(layers) is not None:
        from layersched.sim.tracks.layers_v1.scenario import Scenario

        out.insert(0, ("layers-v1", Scenario(n_tasks=500), "Random", 3))
    return out


def page(track: Any, scenario: Any, seed: int, actions: tuple[int, ...], against: tuple[int, ...] | None) -> str:
    report = episode_report(
        track,
        scenario,
        scenario_name="bench",
        episode_id=f"seed{seed}",
        seed=seed,
        actions=actions,
        trace_hash=trace_hash(actions),
        names=("policy", track.reference_baseline),
        against=against,
    )
    return report_html(report)


def sandboxed(track: Any, scenario: Any, seed: int, baseline: str, root: Path) -> tuple[Any, Any]:
    """A process sandbox holding the policy, started, and the job of the episode."""
    from layersched.worker.sandbox.outcomes import EpisodeJob
    from layersched.worker.sandbox.runner import open_sandbox

    arguments = track.policy_arguments
    source = POLICY.format(track=track.id, baseline=baseline, arguments=arguments)
    (root / "policy.py").write_text(source)
    session = open_sandbox(root, backend="process")
    bundle = hashlib.sha256(source.encode()).hexdigest()
    episode = EpisodeSpec(f"seed{seed}", seed=seed)
    job = EpisodeJob(
        "bench", scenario, episode, policy_seed(bundle, track.scenario_hash(scenario), episode.id), track.id
    )
    return session, job


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--track", help="one track only")
    args = parser.parse_args()
    for track_id, scenario, baseline, seed in cases():
        if args.track and track_id != args.track:
            continue
        track = get_track(track_id)
        with tempfile.TemporaryDirectory() as tmp:
            session, job = sandboxed(track, scenario, seed, baseline, Path(tmp))
            with session:
                first = session.run_episode(job)  # starts the sandbox's process and imports
                if first.status != "ok":
                    raise SystemExit(f"{track_id}: the sandboxed episode ended {first.status}: {first.message}")
                actions = first.actions
                size_of: dict[str, int] = {}
                played, cold, warm = [], [], []
                kept = encode_actions(reference_actions(track, scenario, seed, job.episode.id))
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    outcome = session.run_episode(job)
                    played.append(time.perf_counter() - start)
                    if outcome.trace_hash != first.trace_hash:
                        raise SystemExit(f"{track_id}: the sandboxed run is not deterministic: no figures")
                    start = time.perf_counter()
                    html = page(track, scenario, seed, actions, None)
                    cold.append(time.perf_counter() - start)
                    start = time.perf_counter()
                    again = page(track, scenario, seed, decode_actions(encode_actions(actions)), decode_actions(kept))
                    warm.append(time.perf_counter() - start)
                    if again != html:
                        raise SystemExit(f"{track_id}: the two pages differ: no figures")
                    size_of["page"] = len(html.encode())
        record = schedule_views(track).replay(scenario, SeededRandom(seed), actions)  # type: ignore[union-attr]
        items = len(getattr(record, "jobs", None) or getattr(record, "tasks", None) or ())
        print(
            f"{track_id}: {items} jobs/tasks, {len(actions)} decisions, actions stored in "
            f"{len(encode_actions(actions))} bytes; page {size_of['page'] / 1000:.0f} kB (goal < 500 kB)"
        )
        for name, values in (
            ("evaluation (sandbox)", played),
            ("page, reference kept", warm),
            ("page, run here", cold),
        ):
            print(
                f"  {name:<22} median {statistics.median(values) * 1000:7.1f} ms ({min(values) * 1000:.1f}-"
                f"{max(values) * 1000:.1f})"
            )
        print(
            f"  page / evaluation: reference kept {statistics.median(warm) / statistics.median(played):.2f}x, run here "
            f"{statistics.median(cold) / statistics.median(played):.2f}x (goals: < 100 ms, no more than playing)"
        )


if __name__ == "__main__":
    main()
