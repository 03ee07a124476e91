"""``python -m layersched.sim --track jobs-v1``: the jobs-v1 baselines' table over seeded episodes.

Examples::

    python -m layersched.sim --track jobs-v1                    # rate 0.7, seeds 0-4, simu_len 50
    python -m layersched.sim --track jobs-v1 --rate 0.3 --json
    python -m layersched.sim --track jobs-v1 --seeds 0-9 --dump-jobs jobs.json   # the episodes' jobs too

Each baseline plays every seed's episode (``{ seed = N }``: the reference's ``generate_sequence_work(pa, seed=N)``)
with ``random.Random(N)`` as its rng (only Random uses it); the figures are means over the seeds of each episode's
mean slowdown and mean completion time.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from layersched.sim.arguments import parse_seeds, positive_float
from layersched.sim.episodes import EpisodeSpec
from layersched.sim.tracks.jobs_v1.baselines import BASELINES
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario, expected_load
from layersched.sim.tracks.jobs_v1.workload import draw_jobs, workload_state


def build_parser() -> argparse.ArgumentParser:
    # The module's docstring is the help's description: what the figures are, and examples.
    parser = argparse.ArgumentParser("python -m layersched.sim --track jobs-v1", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--rate", type=positive_float, default=JobsScenario.new_job_rate, help="new_job_rate")
    parser.add_argument("--seeds", type=parse_seeds, default=list(range(5)), help="seeds, e.g. 0-4 (default)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--dump-jobs", type=Path, metavar="FILE", help="also write each seed's jobs as JSON")
    return parser


def baseline_table(scenario: JobsScenario, seeds: Sequence[int]) -> dict[str, dict[str, Any]]:
    """Per baseline: the mean over ``seeds`` of each episode's mean slowdown and mean completion, and the per-seed
    mean slowdowns."""
    from layersched.sim.tracks.jobs_v1 import TRACK  # the track module imports this one's package

    slowdown: dict[str, list[float]] = {name: [] for name in BASELINES}
    completion: dict[str, list[float]] = {name: [] for name in BASELINES}
    for seed in seeds:
        # Every baseline on the seed's one draw of its jobs (run_policies), each with its own random.Random(seed).
        policies = [(policy, random.Random(seed)) for policy in BASELINES.values()]
        workload = EpisodeSpec(f"seed-{seed}", seed=seed).workload_rng()
        for name, run in zip(BASELINES, TRACK.run_policies(scenario, policies, workload), strict=True):
            slowdown[name].append(run.metrics.mean_slowdown)
            completion[name].append(run.metrics.mean_completion)
    rows: dict[str, dict[str, Any]] = {}
    for name in BASELINES:
        rows[name] = {
            "mean_slowdown": statistics.fmean(slowdown[name]),
            "mean_completion": statistics.fmean(completion[name]),
            "per_seed": slowdown[name],
        }
    return rows


def dump_jobs(scenario: JobsScenario, seeds: Sequence[int]) -> list[list[dict[str, Any]]]:
    """Each seed's jobs, as ``{"arrival_step": t, "len": l, "res": [r1, r2]}``."""
    episodes = []
    for seed in seeds:
        jobs = draw_jobs(scenario, workload_state(EpisodeSpec(f"seed-{seed}", seed=seed).workload_rng()))
        episodes.append([{"arrival_step": j.arrival, "len": j.length, "res": list(j.demand)} for j in jobs])
    return episodes


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        scenario = JobsScenario(new_job_rate=args.rate)
    except ValueError as exc:
        parser.error(str(exc))
    table = baseline_table(scenario, args.seeds)
    if args.dump_jobs is not None:
        args.dump_jobs.write_text(json.dumps(dump_jobs(scenario, args.seeds)) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps({"baselines": table}, indent=1))
        return 0
    print(
        f"jobs-v1  rate={scenario.new_job_rate} (load {expected_load(scenario):.0%}) simu_len={scenario.simu_len} "
        f"seeds={args.seeds}"
    )
    print(f"{'':10s} {'slowdown':>9s} {'completion':>11s}")
    for name, row in table.items():
        print(f"{name:10s} {row['mean_slowdown']:9.3f} {row['mean_completion']:11.3f}")
    if args.dump_jobs is not None:
        print(f"jobs of {len(args.seeds)} episodes -> {args.dump_jobs}", file=sys.stderr)
    return 0
