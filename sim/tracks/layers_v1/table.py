"""The lab's baseline table and catalog generation: ``python -m layersched.sim`` without ``--track`` (sim/cli.py).

Examples::

    python -m layersched.sim                                  # the lab's table: 10 nodes, rate 0.3, seeds 0-4
    python -m layersched.sim --nodes 5 --rate 0.5 --json      # machine-readable
    python -m layersched.sim --catalog official-2023-01 --seeds 0-9 --cloud
    python -m layersched.sim catalog --seed 0 --out sim/tracks/layers_v1/data/lab_seed0.json  # the lab catalog, again
    python -m layersched.sim --track jobs-v1 --help           # another track's table: its module's ``table``
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from layersched.sim.arguments import parse_seeds, positive_float, positive_int
from layersched.sim.errors import SimError
from layersched.sim.tracks import DEFAULT_TRACK_ID
from layersched.sim.tracks.layers_v1.baselines import BASELINES, Policy
from layersched.sim.tracks.layers_v1.catalog import catalog_summary, load_catalog, synthetic_catalog
from layersched.sim.tracks.layers_v1.episode import run_lab_baseline
from layersched.sim.tracks.layers_v1.replay import ReplayEnv
from layersched.sim.tracks.layers_v1.scenario import CloudNode, Scenario
from layersched.sim.version import SIM_VERSION


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m layersched.sim",
        description="Run the six baselines on the reference simulator (mean +- population std over seeds).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("Examples::", 1)[1] if __doc__ else None,
    )
    parser.add_argument("--nodes", type=positive_int, default=10, help="edge nodes (default 10)")
    parser.add_argument("--rate", type=positive_float, default=0.3, help="task arrival rate per second (default 0.3)")
    parser.add_argument("--tasks", type=positive_int, default=500, help="tasks per episode (default 500)")
    parser.add_argument("--slots", type=positive_int, default=4, help="container slots per node (default 4)")
    parser.add_argument("--catalog", default="lab", help="built-in catalog name or JSON file (default lab)")
    parser.add_argument("--seeds", type=parse_seeds, default=list(range(5)), help="seeds, e.g. 0-4 (default)")
    parser.add_argument("--cloud", action="store_true", help="add the cloud node (lab extension 1)")
    parser.add_argument("--baselines", default=",".join(BASELINES), help="comma-separated subset to run")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--track", default=DEFAULT_TRACK_ID, help="another track's table (its own options follow)")
    sub = parser.add_subparsers(dest="command")
    gen = sub.add_parser("catalog", help="generate a synthetic catalog like the lab's make_images.py")
    gen.add_argument("--seed", type=int, default=0, help="random.Random seed (0 is the lab's catalog)")
    gen.add_argument("--out", type=Path, required=True, help="where to write the JSON catalog")
    heft = sub.add_parser("heft", help="workflows-v1: HEFT's ranks, schedule and makespan for a static DAG (JSON)")
    heft.add_argument("dag", type=Path, help="the DAG: tasks, edges, W, bandwidth, startup")
    heft.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return parser


def baseline_table(
    scenario: Scenario, seeds: Sequence[int], names: Sequence[str], policies: Mapping[str, Policy] = BASELINES
) -> dict[str, dict[str, object]]:
    """Per baseline: the per-seed mean completion times, their mean and population std (``policies`` by name)."""
    env = ReplayEnv(scenario)  # every baseline on one seed's episode, drawn once
    per_seed: dict[str, list[float]] = {name: [] for name in names}
    for seed in seeds:
        for name in per_seed:
            per_seed[name].append(run_lab_baseline(env, policies[name], seed))
    return {
        name: {"per_seed": results, "mean": statistics.fmean(results), "std": statistics.pstdev(results)}
        for name, results in per_seed.items()
    }


def main(argv: Sequence[str]) -> int:
    """The lab's table (or ``catalog``, ``heft``) for the arguments ``argv``, ``--track`` already taken off."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "heft":
        # Imported here: the lab's table never imports numpy (tests/sim/layers/test_lean_episode.py); that track does.
        from layersched.sim.tracks.workflows_v1.cli import heft_main

        return heft_main(args.dag, as_json=args.json)
    try:
        if args.command == "catalog":
            catalog = synthetic_catalog(random.Random(args.seed), name=args.out.stem)
            args.out.write_text(json.dumps(catalog.to_json(), indent=1) + "\n", encoding="utf-8")
            s = catalog_summary(catalog)
            summary = f"{s['images']:.0f} images, mean {s['mean_image_mb']:.0f} MB, max {s['max_image_mb']:.0f} MB"
            print(f"{summary} -> {args.out}")
            return 0
        names = [n.strip() for n in args.baselines.split(",") if n.strip()]
        unknown = [n for n in names if n not in BASELINES]
        if unknown:
            parser.error(f"unknown baseline {unknown[0]!r}; choose from {', '.join(BASELINES)}")
        scenario = Scenario(
            catalog=load_catalog(args.catalog),
            n_nodes=args.nodes,
            n_tasks=args.tasks,
            arrival_rate=args.rate,
            slots=args.slots,
            cloud=CloudNode() if args.cloud else None,
        )
        table = baseline_table(scenario, args.seeds, names)
    except SimError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        out = {
            "sim_version": SIM_VERSION,
            "scenario_hash": scenario.content_hash,
            "scenario": scenario.params(),
            "seeds": args.seeds,
            "baselines": table,
        }
        print(json.dumps(out, indent=1))
    else:
        print(
            f"layersched.sim {SIM_VERSION}  catalog={scenario.catalog.name} nodes={args.nodes} rate={args.rate} "
            f"tasks={args.tasks} seeds={args.seeds}"
        )
        for name, row in table.items():
            print(f"{name:12s} {row['mean']:7.1f} +- {row['std']:5.1f} s")
    return 0
