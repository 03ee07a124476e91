"""Benchmark: workflows-v1's HEFT planner against a plain transcription of the paper's pseudo-code, in one run.

Issue 20: HEFT (Topcuoglu, Hariri and Wu, IEEE TPDS 2002) on a 1,000-task DAG over 16 processors. The named
reference is ``tests/sim/workflows/reference_heft.py``: the paper's steps as written (ranks by recursion over
successors in exact fractions, the list in decreasing rank, each processor's earliest idle gap found by scanning its
tasks in start order), the oracle the property tests hold the planner to. Before timing, both plan every DAG and
must give the same ranks and the same (processor, start, finish) for every task; the benchmark refuses to report
figures otherwise.

The DAGs are layered and seeded (``random.Random(seed)``): 1,000 tasks in 40 layers, each task fed by 1-4 tasks of
the layers before, costs uniform in 5..50 on every processor (a tenth of the entries ``null``: unrelated machines
that cannot run some tasks), bandwidths uniform in 1..4, data uniform in 1..30, startup 0.

Run: ``python benchmarks/bench_heft.py [--tasks 1000] [--procs 16] [--repeats 3] [--seeds 2]``
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from layersched.sim.tracks.workflows_v1.dag import StaticDag
from layersched.sim.tracks.workflows_v1.heft import heft

# The oracle lives with the tests that pin the planner to it; the benchmark runs from the repository's root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.sim.workflows.reference_heft import reference_heft


def layered_dag(seed: int, n_tasks: int, n_procs: int, layers: int = 40) -> StaticDag:
    rng = random.Random(seed)
    per_layer = n_tasks // layers
    layer_of = [min(i // per_layer, layers - 1) for i in range(n_tasks)]
    edges: list[tuple[int, int, float]] = []
    for child in range(per_layer, n_tasks):
        earlier = [i for i in range(child) if layer_of[i] < layer_of[child]]
        for parent in sorted(rng.sample(earlier[-3 * per_layer :], rng.randint(1, 4))):
            edges.append((parent, child, float(rng.randint(1, 30))))
    costs: list[list[float | None]] = []
    for _ in range(n_tasks):
        row: list[float | None] = [float(rng.randint(5, 50)) for _ in range(n_procs)]
        for p in rng.sample(range(n_procs), n_procs // 10):
            row[p] = None
        costs.append(row)
    bandwidth = [[float(rng.randint(1, 4)) for _ in range(n_procs)] for _ in range(n_procs)]
    startup = [[0.0] * n_procs for _ in range(n_procs)]
    return StaticDag.build([f"t{i}" for i in range(n_tasks)], edges, costs, bandwidth, startup)


def same_schedules(dag: StaticDag) -> None:
    plan = heft(dag)
    ranks, schedule = reference_heft(dag)
    if plan.ranks != tuple(float(r) for r in ranks):
        raise SystemExit("the planner's ranks differ from the transcription's: no figures")
    mine = {s.task: (s.proc, s.start, s.finish) for s in plan.slots}
    if mine != {i: (q, float(s), float(f)) for i, (q, s, f) in schedule.items()}:
        raise SystemExit("the planner's schedule differs from the transcription's: no figures")


def seconds(plan: Callable[[StaticDag], Any], dags: list[StaticDag], repeats: int) -> list[float]:
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        for dag in dags:
            plan(dag)
        runs.append((time.perf_counter() - start) / len(dags))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--procs", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args()
    dags = [layered_dag(seed, args.tasks, args.procs) for seed in range(args.seeds)]
    for dag in dags:
        same_schedules(dag)
    print(f"{args.seeds} DAGs of {args.tasks} tasks, {len(dags[0].edges)}+ edges, {args.procs} processors: same ranks "
          "and schedules on both sides")  # fmt: skip
    # Alternated, so that a change in the machine's load falls on both sides.
    ours, reference = [], []
    for _ in range(args.repeats):
        ours += seconds(heft, dags, 1)
        reference += seconds(reference_heft, dags, 1)
    mine, theirs = statistics.median(ours), statistics.median(reference)
    print(f"HEFT planner     median {mine:.3f} s per DAG ({min(ours):.3f}-{max(ours):.3f})")
    print(f"transcription    median {theirs:.3f} s per DAG ({min(reference):.3f}-{max(reference):.3f})")
    print(f"ratio            {theirs / mine:.1f}x (target 5x)")


if __name__ == "__main__":
    main()
