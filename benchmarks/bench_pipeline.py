"""Benchmark: evaluation throughput with 1 and 2 workers, and submit-to-leaderboard latency.

Runs the real service as separate processes (Postgres, Redis, uvicorn, Celery workers, Docker sandbox), like
``tests/pipeline/test_e2e.py``:

* throughput: N Greedy submissions from N participants are uploaded at once; the time until the last one is
  ``succeeded`` gives evaluations per minute, with 1 worker and then with 2 workers (same N, fresh database), on
  the evaluation set chosen with ``--evalset``:

  - ``challenge`` (default): a real hidden set drawn (fresh keys) from ``hidden_seeds/challenge-example.toml``,
    5 scenarios x 30 episodes x 500 tasks, the size of set a challenge runs; evaluation work dominates;
  - ``sample``: the 6-episode public sample set, where the fixed cost per submission (upload, container start and
    removal in the Docker engine, database writes) dominates;

* latency: one Greedy submission on the demo (sample) set, from the upload until it appears ranked on the
  leaderboard API, with an idle worker (container start included).

Run: ``python benchmarks/bench_pipeline.py [--evalset challenge] [--submissions 8] [--repeats 3]`` (needs
scripts/test's setup: Postgres, redis-server, the Docker engine and the sandbox image).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from layersched.server import admin
from layersched.sim.evalset import new_evalset
from tests.pipeline.stack import SAMPLE, Stack, running_stack, wait_for

CHALLENGE_TEMPLATE = Path(__file__).resolve().parents[1] / "hidden_seeds" / "challenge-example.toml"

GREEDY = b"""from layersched.sim.tracks.layers_v1.baselines import greedy_estimate


def policy(env, task, rng):
    return greedy_estimate(env, task, rng)
"""


def _tokens(stack: Stack, n: int) -> list[str]:
    return [admin.add_user(name=f"p{i}", email=f"p{i}@example.org", settings=stack.settings).token for i in range(n)]


def throughput(workers: int, n: int, cache: Path, evalset: Path) -> float:
    """Seconds from uploading ``n`` submissions at once until all of them succeeded."""
    with tempfile.TemporaryDirectory() as tmp, running_stack(Path(tmp), cache, evalset) as stack:
        tokens = _tokens(stack, n)
        for w in range(workers):
            stack.start_worker(f"worker{w}")
        time.sleep(3)  # workers connected and idle before the clock starts
        start = time.monotonic()
        ids = [stack.upload(token, GREEDY, "greedy") for token in tokens]
        for token, submission_id in zip(tokens, ids, strict=True):
            state = wait_for(lambda t=token, i=submission_id: _final(stack, t, i), 600, f"submission {submission_id}")
            assert state == "succeeded", state
        return time.monotonic() - start


def _final(stack: Stack, token: str, submission_id: int) -> str | None:
    state = stack.submission(token, submission_id)["state"]
    return state if state in ("succeeded", "failed", "cancelled") else None


def latency(cache: Path) -> float:
    """Seconds from uploading one Greedy submission until it is ranked on the leaderboard."""
    with tempfile.TemporaryDirectory() as tmp, running_stack(Path(tmp), cache) as stack:
        (token,) = _tokens(stack, 1)
        stack.start_worker()
        time.sleep(3)
        start = time.monotonic()
        stack.upload(token, GREEDY, "greedy")

        def ranked() -> bool:
            rows = httpx.get(f"{stack.api_url}/api/v1/leaderboard", timeout=10).json()["rows"]
            return any(r["participant"] == "p0" and r["rank"] is not None for r in rows)

        wait_for(ranked, 120, "the leaderboard")
        return time.monotonic() - start


def throughput_set(kind: str, workdir: Path) -> tuple[Path, str]:
    """The evaluation set for the throughput runs and a line describing it."""
    if kind == "sample":
        return SAMPLE, "the public sample set (6 episodes x 300 tasks)"
    drawn = new_evalset(CHALLENGE_TEMPLATE, workdir / "bench-challenge.toml")
    episodes = sum(len(sc.episodes) for sc in drawn.scenarios)
    described = f"a hidden challenge set ({len(drawn.scenarios)} scenarios, {episodes} episodes of 500 tasks)"
    return workdir / "bench-challenge.toml", described


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--evalset", choices=["challenge", "sample"], default="challenge", help="set for throughput")
    parser.add_argument("--submissions", type=int, default=8, help="submissions per throughput run")
    parser.add_argument("--repeats", type=int, default=3, help="runs per configuration; medians are reported")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache_dir:
        cache = Path(cache_dir)
        evalset, described = throughput_set(args.evalset, cache)
        one = [throughput(1, args.submissions, cache, evalset) for _ in range(args.repeats)]
        two = [throughput(2, args.submissions, cache, evalset) for _ in range(args.repeats)]
        lat = [latency(cache) for _ in range(args.repeats)]
    m1, m2 = statistics.median(one), statistics.median(two)
    print(f"{args.submissions} Greedy submissions on {described}, docker sandbox:")
    for label, median, runs in (("1 worker ", m1, one), ("2 workers", m2, two)):
        rate = 60 * args.submissions / median
        print(f"  {label}: {median:6.1f} s  ({rate:5.1f} evaluations/min)  runs {[round(x, 1) for x in runs]}")
    print(f"  speed-up 2 vs 1 workers: {m1 / m2:.2f}x")
    print(
        f"submit -> ranked on the leaderboard, one Greedy submission: median {statistics.median(lat):.1f} s "
        f"(runs {[round(x, 1) for x in lat]})"
    )
    print(f"(medians of {args.repeats} runs)")


if __name__ == "__main__":
    main()
