"""Benchmark: the deadline-night burst. 200 submissions from 50 participants, all uploaded at once, 2 workers.

Runs the real service as separate processes (tests/pipeline/stack.py: PostgreSQL, a private Redis, uvicorn, Celery
workers, the Docker sandbox). The daily quota and the in-flight limit are raised so that every upload is accepted
(``LAYERSCHED_DAILY_QUOTA``, ``LAYERSCHED_MAX_IN_FLIGHT``). Each submission is Greedy with its own comment line (a
distinct bundle). Reported: upload latencies, the time until every submission is final, evaluations per minute, and
the loss and double-count checks, read from the database: every submission ``succeeded``, exactly one evaluation
each, exactly one row per episode.

Run: ``python benchmarks/bench_burst.py [--submissions 200] [--participants 50] [--workers 2] [--runs 1]``.
A full run takes tens of minutes on a two-core machine (the evaluations themselves; see bench_pipeline.py).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, select

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from layersched.server import admin
from layersched.server.db import make_engine
from layersched.server.models import EpisodeResult, Evaluation, Submission
from tests.pipeline.stack import Stack, running_stack, wait_for

GREEDY = b"""from layersched.sim.tracks.layers_v1.baselines import greedy_estimate


def policy(env, task, rng):
    return greedy_estimate(env, task, rng)
"""
FINAL = ("succeeded", "failed", "cancelled")


def _upload(stack: Stack, token: str, i: int) -> tuple[int, float]:
    start = time.monotonic()
    response = httpx.post(
        f"{stack.api_url}/api/v1/submissions",
        headers={"Authorization": f"Bearer {token}"},
        files={"file": ("policy.py", GREEDY + f"# submission {i}\n".encode(), "text/x-python")},
        data={"name": f"burst {i}"},
        timeout=120,
    )
    assert response.status_code == 201, response.text
    return int(response.json()["id"]), time.monotonic() - start


def _states(stack: Stack, organiser: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    offset = 0
    while True:
        page = httpx.get(
            f"{stack.api_url}/api/v1/submissions?offset={offset}&limit=200",
            headers={"Authorization": f"Bearer {organiser}"},
            timeout=60,
        ).json()
        for row in page["data"]:
            key = row["state"] if row["error"] is None else f"{row['state']}: {row['error']['message'][:160]}"
            counts[key] = counts.get(key, 0) + 1
        offset += len(page["data"])
        if offset >= page["count"] or not page["data"]:
            return counts


def burst(*, submissions: int, participants: int, workers: int, cache: Path) -> dict[str, Any]:
    per_user = -(-submissions // participants)
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_stack(
            Path(tmp),
            cache,
            LAYERSCHED_DAILY_QUOTA=str(per_user),
            LAYERSCHED_MAX_IN_FLIGHT=str(per_user),
        ) as stack,
    ):
        tokens = [
            admin.add_user(name=f"p{i}", email=f"p{i}@example.org", settings=stack.settings).token
            for i in range(participants)
        ]
        organiser = admin.add_user(name="olga", email="olga@example.org", role="organiser", settings=stack.settings)
        for w in range(workers):
            stack.start_worker(f"worker{w}")
        time.sleep(3)  # workers connected and idle before the clock starts
        start = time.monotonic()
        with ThreadPoolExecutor(max_workers=32) as pool:
            uploads = list(pool.map(lambda i: _upload(stack, tokens[i % participants], i), range(submissions)))
        uploaded = time.monotonic() - start
        states = wait_for(
            lambda: (
                (s := _states(stack, organiser.token))
                and sum(n for k, n in s.items() if k.split(":")[0] in FINAL) == submissions
                and s
            ),
            4 * 3600,
            "every submission final",
        )
        elapsed = time.monotonic() - start

        engine = make_engine(stack.settings.database_url)
        with engine.connect() as conn:
            n_submissions = conn.scalar(select(func.count(Submission.id)))
            n_evaluations = conn.scalar(select(func.count(Evaluation.id)))
            per_evaluation = conn.execute(
                select(EpisodeResult.evaluation_id, func.count(EpisodeResult.id)).group_by(EpisodeResult.evaluation_id)
            ).all()
            duplicates = conn.scalar(
                select(func.count()).select_from(
                    select(EpisodeResult.evaluation_id, EpisodeResult.scenario, EpisodeResult.episode_id)
                    .group_by(EpisodeResult.evaluation_id, EpisodeResult.scenario, EpisodeResult.episode_id)
                    .having(func.count() > 1)
                    .subquery()
                )
            )
        engine.dispose()
        latencies = sorted(t for _, t in uploads)
        return {
            "uploaded_s": uploaded,
            "upload_p50_ms": latencies[len(latencies) // 2] * 1000,
            "upload_p99_ms": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] * 1000,
            "total_s": elapsed,
            "per_min": 60 * submissions / elapsed,
            "states": states,
            "submissions": n_submissions,
            "evaluations": n_evaluations,
            "episode_rows": sorted({count for _, count in per_evaluation}),
            "duplicate_episodes": duplicates,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", type=int, default=200)
    parser.add_argument("--participants", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=1, help="runs; medians are reported")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache_dir:
        results = [
            burst(
                submissions=args.submissions,
                participants=args.participants,
                workers=args.workers,
                cache=Path(cache_dir),
            )
            for _ in range(args.runs)
        ]
    print(
        f"burst of {args.submissions} Greedy submissions from {args.participants} participants, "
        f"{args.workers} workers, docker sandbox, sample set (6 episodes each)"
    )
    keys = ["uploaded_s", "upload_p50_ms", "upload_p99_ms", "total_s", "per_min"]
    print("run  " + "".join(f"{k:>15}" for k in keys) + "  states / rows")
    for i, r in enumerate(results, 1):
        checks = (
            f"{r['states']} submissions={r['submissions']} evaluations={r['evaluations']} "
            f"episodes/evaluation={r['episode_rows']} duplicates={r['duplicate_episodes']}"
        )
        print(f"{i:<5}" + "".join(f"{r[k]:>15.1f}" for k in keys) + "  " + checks)
    if len(results) > 1:
        print("med  " + "".join(f"{statistics.median(r[k] for r in results):>15.1f}" for k in keys))
    lost = [r for r in results if r["states"].get("succeeded", 0) != args.submissions]
    double = [r for r in results if r["evaluations"] != args.submissions or r["duplicate_episodes"]]
    print(f"lost: {lost or 'none'}; double counted: {double or 'none'}")


if __name__ == "__main__":
    main()
