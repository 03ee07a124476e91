"""Benchmark: the baseline rows of a 150-episode evaluation set of a track, as the server scores them (2 processes).

Issue 20 asks for the figure for workflows-v1 (and it serves every track): the set is the track's public sample's
first scenario with ``--episodes`` fresh keyed episodes (keys from ``random.Random(0)``: the figures are
reproducible, the workloads are not the sample's), every baseline played on each (``score_baselines``, no cache).
The named reference is the same work in one process (``workers=1``), alternated with the two-process run; both
must give the same records, or the benchmark reports nothing.

Run: ``python benchmarks/bench_track_rows.py [--track workflows-v1] [--episodes 150] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from layersched.sim.episodes import EpisodeSpec
from layersched.sim.evalset import EvalScenario, EvalSet, evalset_file, load_evalset, score_baselines
from layersched.sim.evalset.parse import sample_set_name


def keyed_set(track: str, episodes: int) -> EvalSet:
    name = sample_set_name(track)
    if name is None:
        raise SystemExit(f"track {track!r} has no built-in public sample")
    first = load_evalset(evalset_file(name)).scenarios[0]
    keys = random.Random(0)
    specs = tuple(EpisodeSpec(f"k{i}", key=keys.randbytes(16)) for i in range(episodes))
    return EvalSet(f"{track}-rows", (EvalScenario(first.name, 1.0, first.scenario, specs),), track=track)


def timed(evalset: EvalSet, workers: int) -> tuple[float, object]:
    start = time.perf_counter()
    records = score_baselines(evalset, workers=workers)
    return time.perf_counter() - start, records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--track", default="workflows-v1")
    parser.add_argument("--episodes", type=int, default=150)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    evalset = keyed_set(args.track, args.episodes)
    two, one = [], []
    for _ in range(args.repeats):
        seconds_two, records_two = timed(evalset, 2)
        seconds_one, records_one = timed(evalset, 1)
        if records_two != records_one:
            raise SystemExit("two processes gave other records than one: no figures")
        two.append(seconds_two)
        one.append(seconds_one)
    print(f"{args.track}: {args.episodes} episodes x {len(records_one)} baselines (same records on both sides)")  # type: ignore[arg-type]
    print(f"2 processes   median {statistics.median(two):.2f} s ({min(two):.2f}-{max(two):.2f})")
    print(f"1 process     median {statistics.median(one):.2f} s ({min(one):.2f}-{max(one):.2f})")
    print(f"ratio         {statistics.median(one) / statistics.median(two):.2f}x")


if __name__ == "__main__":
    main()
