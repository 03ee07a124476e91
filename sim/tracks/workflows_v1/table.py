"""The baseline table of ``workflows-v1``: ``python -m layersched.sim --track workflows-v1 [--json] [--seeds 0-4]``.

Every baseline plays each seed's episode of the default scenario (``WorkflowScenario()``), all on the same drawn
workflows (``run_policies``), its rng ``random.Random(seed)``. Per baseline: mean and population std over seeds of
the primary metric, and the mean of every metric.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from collections.abc import Sequence
from typing import Any

from layersched.sim.arguments import parse_seeds
from layersched.sim.tracks.workflows_v1 import TRACK
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario
from layersched.sim.version import SIM_VERSION


def baseline_table(scenario: WorkflowScenario, seeds: Sequence[int]) -> dict[str, dict[str, Any]]:
    """Per baseline: ``per_seed`` mean completion times, their ``mean`` and ``std``, and each metric's mean."""
    names = TRACK.baseline_names
    records: dict[str, list[Any]] = {name: [] for name in names}
    for seed in seeds:
        policies = [(TRACK.baseline(name), random.Random(seed)) for name in names]
        for name, run in zip(names, TRACK.run_policies(scenario, policies, random.Random(seed)), strict=True):
            records[name].append(run.metrics)
    table = {}
    for name, metrics in records.items():
        primary = [m.mean_completion for m in metrics]
        table[name] = {
            "per_seed": primary,
            "mean": statistics.fmean(primary),
            "std": statistics.pstdev(primary),
            "metrics": {s.name: statistics.fmean(getattr(m, s.name) for m in metrics) for s in TRACK.metric_specs},
        }
    return table


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser("python -m layersched.sim --track workflows-v1", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--seeds", type=parse_seeds, default=list(range(5)), help="seeds, e.g. 0-4 (default)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return parser


def main(argv: Sequence[str]) -> int:
    """``python -m layersched.sim --track workflows-v1 ARGS``: the lab's CLI hands this track's arguments here."""
    args = build_parser().parse_args(argv)
    seeds, as_json = args.seeds, args.json
    scenario = WorkflowScenario()
    table = baseline_table(scenario, seeds)
    if as_json:
        out = {
            "sim_version": SIM_VERSION,
            "track": TRACK.id,
            "scenario_hash": scenario.content_hash,
            "scenario": scenario.to_json(),
            "seeds": list(seeds),
            "baselines": table,
        }
        print(json.dumps(out, indent=1))
        return 0
    print(
        f"{TRACK.id}  vms={list(scenario.vm_counts)} workflows={scenario.n_workflows} rate={scenario.arrival_rate} "
        f"seeds={list(seeds)}"
    )
    print(
        f"{'':8s} {'mean completion':>19s} {'p95':>7s} {'makespan':>8s} {'cpu':>5s} {'mem':>5s} {'wtd':>5s} {'sla':>5s}"
    )
    for name, row in table.items():
        m = row["metrics"]
        print(
            f"{name:8s} {row['mean']:7.1f} +- {row['std']:6.1f} s {m['p95_completion']:7.1f} {m['makespan']:8.1f} "
            f"{m['cpu_utilisation']:5.3f} {m['memory_utilisation']:5.3f} {m['weighted_utilisation']:5.3f} "
            f"{m['sla_violation_rate']:5.3f}"
        )
    return 0
