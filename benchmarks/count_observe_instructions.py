"""Instructions per late ``observe()`` call, layersched.sim against the lab transcription, counted by callgrind.

Wall time on these VMs drifts by up to 40% between runs; instruction counts do not (the same binary, input and
environment give the same count whatever else the machine does). This counts, for each simulator, the instructions
of a process that warms up as ``bench_sim.py`` does (seed 0, 450 Greedy placements, every remaining task observed
once) and then observes the 50 remaining tasks ``--passes`` more times, minus those of the same process with no
extra passes: what is left is the cost of the calls alone. It is not a substitute for the timed benchmark (a
simulator can execute fewer instructions more slowly), but it compares two variants of ``observe()`` to within a
fraction of a percent in a minute.

layersched.sim is counted twice: with observe()'s C kernel (sim/tracks/layers_v1/_observe.c, the default where it was
built) and with its Python loop alone (``observe_kernel = None``, what the sandbox image runs).

Run: ``python benchmarks/count_observe_instructions.py [--passes 50]`` (needs valgrind).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import callgrind

HERE = Path(__file__).resolve().parent


def observe_passes(which: str, passes: int) -> None:
    """The measured process: warm up one simulator, then observe the remaining tasks ``passes`` times."""
    sys.path.insert(0, str(HERE))
    from bench_sim import WARMUP, LabEnv, lab_greedy, warm_up

    from layersched.sim.tracks.layers_v1.baselines import greedy_estimate
    from layersched.sim.tracks.layers_v1.catalog import load_catalog
    from layersched.sim.tracks.layers_v1.env import ClusterEnv
    from layersched.sim.tracks.layers_v1.scenario import Scenario

    catalog = load_catalog("lab")
    if which.startswith("layersched"):
        env, policy = ClusterEnv(Scenario(catalog=catalog)), greedy_estimate
        if which == "layersched-python":
            env.observe_kernel = None  # observe()'s Python loop instead of its C kernel
    else:
        env, policy = LabEnv(catalog.to_json()), lab_greedy  # type: ignore[assignment]
    warm_up(env, policy, 0)
    remaining = env.tasks[WARMUP:]
    for task in remaining:  # plans made stale by the warm-up are rebuilt here, in both processes
        env.observe(task)
    for _ in range(passes):
        for task in remaining:
            env.observe(task)


def instructions(which: str, passes: int) -> int:
    """Instructions callgrind counts for ``observe_passes(which, passes)`` in a fresh interpreter."""
    return callgrind.instructions(__file__, ["--child", which, str(passes)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passes", type=int, default=50, help="extra passes over the 50 remaining tasks")
    parser.add_argument("--child", nargs=2, metavar=("WHICH", "PASSES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        observe_passes(args.child[0], int(args.child[1]))
        return
    if args.passes < 1:
        parser.error(f"--passes must be at least 1, got {args.passes}")
    callgrind.require_valgrind()
    calls = 50 * args.passes
    per_call = {}
    for which in ("lab", "layersched", "layersched-python"):
        per_call[which] = (instructions(which, args.passes) - instructions(which, 0)) / calls
    print(f"instructions per late observe() call ({calls} calls, seed 0, state after 450 Greedy placements):")
    print(f"  lab transcription            {per_call['lab']:10,.0f}")
    for which, label in (("layersched", "C kernel"), ("layersched-python", "Python loop")):
        ratio = per_call["lab"] / per_call[which]
        print(f"  layersched.sim, {label:12s} {per_call[which]:10,.0f}   {ratio:.1f}x fewer")


if __name__ == "__main__":
    main()
