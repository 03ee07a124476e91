"""Benchmark: the leaderboard API under sustained load, with 10,000 stored scored submissions.

A fresh PostgreSQL database gets 500 participants and 10,000 submissions (each with a succeeded, scored
evaluation; every fifth participant has a selected one; a few are disqualified), plus the six baseline rows, inserted
in bulk. The API runs as ``uvicorn --factory layersched.server.app:create_app`` (one process, as deployed) on
loopback. The load generator is a constant-rate open-loop client (asyncio + httpx): request i is due at
``start + i / rate`` whatever the earlier responses did, and its latency is measured from that due time, so a
stalled server shows up in the percentiles instead of slowing the client (no coordinated omission; what wrk2 does,
which Debian's ``wrk`` does not), over 64 keep-alive connections. ``--wrk`` also runs Debian's ``wrk`` (closed
loop, fixed connections) for comparison; its latencies are not at a fixed rate.

Run: ``python benchmarks/bench_leaderboard.py [--rate 200] [--seconds 20] [--runs 3] [--wrk]``.
The goal is p99 < 100 ms at 200 requests/s.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert, select

from layersched.server import storage
from layersched.server.admin import upgrade_database
from layersched.server.config import Settings
from layersched.server.db import make_engine, make_sessionmaker
from layersched.server.models import Evaluation, Submission, User
from tests.pipeline.stack import free_port, wait_for
from tests.server.conftest import PG_URL, SCENARIOS, create_pg_database, drop_pg_database

PATH = "/api/v1/leaderboard"


def _score(rng: random.Random) -> dict[str, object]:
    overall = rng.uniform(0.6, 1.4)
    return {
        "overall": overall,
        "ci_low": overall - 0.02,
        "ci_high": overall + 0.02,
        "per_scenario": {s["name"]: overall * rng.uniform(0.9, 1.1) for s in SCENARIOS},
    }


def populate(url: str, *, submissions: int, participants: int, seed: int = 0) -> None:
    """Users, submissions and succeeded evaluations in bulk (storage functions for the evaluation set and baselines)."""
    rng = random.Random(seed)
    engine = make_engine(url)
    with make_sessionmaker(engine)() as session:
        evalset = storage.register_evalset(
            session=session, name="sample", commitment="c" * 64, path="hidden_seeds/sample.toml", scenarios=SCENARIOS
        )
        for name in ("Random", "LeastLoaded", "Kube", "Dep", "LRS", "Greedy"):
            storage.upsert_baseline_result(
                session=session,
                evalset_commitment=evalset.commitment,
                sim_version="1.0.0",
                baseline=name,
                score_public=_score(rng),
                score_private=_score(rng),
            )
        session.execute(
            insert(User),
            [
                {"name": f"p{i:04d}", "email": f"p{i:04d}@example.org", "role": "participant"}
                for i in range(participants)
            ],
        )
        owners = list(session.scalars(select(User.id).order_by(User.id)))
        phase_id = storage.get_phase(session=session, name=storage.DEFAULT_PHASE).id
        start = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
        rows = []
        for i in range(submissions):
            owner = owners[i % participants]
            rows.append(
                {
                    "owner_id": owner,
                    "phase_id": phase_id,
                    "name": f"policy {i}",
                    "description": "",
                    "bundle_sha256": f"{i:064x}",
                    "bundle_format": "py",
                    "bundle_bytes": 100,
                    "created_at": start + dt.timedelta(minutes=i),
                    "selected": i % (participants * 5) == owner % 5 and owner % 5 == 0,
                    "disqualified_reason": "copied" if i % 997 == 0 else None,
                    "counts_against_quota": True,
                }
            )
        session.execute(insert(Submission), rows)
        ids = list(session.scalars(select(Submission.id).order_by(Submission.id)))
        session.execute(
            insert(Evaluation),
            [
                {
                    "submission_id": sid,
                    "kind": "initial",
                    "evalset_name": "sample",
                    "evalset_commitment": evalset.commitment,
                    "state": "succeeded",
                    "progress_done": 8,
                    "progress_total": 8,
                    "attempts": 1,
                    "created_at": start,
                    "started_at": start,
                    "finished_at": start,
                    "sim_version": "1.0.0",
                    "sandbox": "docker",
                    "score_public": _score(rng),
                    "score_private": _score(rng),
                }
                for sid in ids
            ],
        )
        session.commit()
    # A database filled row by row over a term has its planner statistics kept by autovacuum; one filled in a second
    # has none until autovacuum wakes, and the board's query then plans nested loops over every row (29 s at 2,000
    # submissions instead of 0.3 s). What autovacuum would have done, done now.
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql("ANALYZE")
    engine.dispose()


class _Connection:
    """A keep-alive HTTP/1.1 connection that sends GETs and reads bodies by Content-Length.

    Hand-written because an httpx client spends more CPU per 160 kB response than the server does, and on a
    two-core machine the generator then measures itself.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self.reader, self.writer, self.host = reader, writer, host

    async def get(self, path: str) -> int:
        self.writer.write(f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n\r\n".encode())
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = next(
            int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
        )
        await self.reader.readexactly(length)
        return status


async def constant_rate(url: str, *, rate: float, seconds: float, connections: int = 64) -> dict[str, float]:
    """Open-loop load at ``rate`` requests/s over ``connections`` keep-alive connections; each latency runs from the
    request's due time (waiting for a free connection included); failures are non-200 answers and broken sockets."""
    host, port = url.removeprefix("http://").split(":")
    pool: asyncio.Queue[_Connection] = asyncio.Queue()
    for _ in range(connections):
        reader, writer = await asyncio.open_connection(host, int(port), limit=1 << 20)
        pool.put_nowait(_Connection(reader, writer, f"{host}:{port}"))
    for _ in range(connections):  # warm up every connection (and the server's cache)
        connection = await pool.get()
        await connection.get(PATH)
        pool.put_nowait(connection)
    n = int(rate * seconds)
    latencies: list[float] = []
    failures = 0
    start = time.perf_counter() + 0.1

    async def one(i: int) -> None:
        nonlocal failures
        due = start + i / rate
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        connection = await pool.get()
        try:
            failures += await asyncio.wait_for(connection.get(PATH), 30) != 200
            pool.put_nowait(connection)
        except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError):
            failures += 1  # the connection is dropped; the others carry on
        latencies.append(time.perf_counter() - due)

    await asyncio.gather(*(one(i) for i in range(n)))
    elapsed = time.perf_counter() - start
    while not pool.empty():
        pool.get_nowait().writer.close()
    latencies.sort()

    def pick(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000

    return {
        "failed": failures,
        "sent": n,
        "achieved_rps": n / elapsed,
        "p50": pick(0.50),
        "p90": pick(0.90),
        "p99": pick(0.99),
        "max": latencies[-1] * 1000,
    }


def run_wrk(url: str, *, seconds: int, connections: int) -> str:
    out = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", url + PATH],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--submissions", type=int, default=10_000)
    parser.add_argument("--participants", type=int, default=500)
    parser.add_argument("--rate", type=float, default=200)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--wrk", action="store_true", help="also run Debian's wrk (closed loop) for comparison")
    args = parser.parse_args()

    database = create_pg_database()
    url = PG_URL.format(name=database)
    tmp = Path(tempfile.mkdtemp(prefix="bench-leaderboard-"))
    api = None
    try:
        upgrade_database(settings=Settings(database_url=url, _env_file=None))  # type: ignore[call-arg]
        t0 = time.monotonic()
        populate(url, submissions=args.submissions, participants=args.participants)
        print(
            f"stored {args.submissions} submissions from {args.participants} participants"
            f" in {time.monotonic() - t0:.1f} s"
        )
        port = free_port()
        env = {
            **os.environ,
            "LAYERSCHED_DATABASE_URL": url,
            "LAYERSCHED_BUNDLE_DIR": str(tmp / "bundles"),
            "LAYERSCHED_BROKER_URL": "redis://127.0.0.1:6379/15",
        }
        log = (tmp / "api.log").open("wb")
        api = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "--factory",
                "layersched.server.app:create_app",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--no-access-log",
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: _up(base), 30, "the API")
        board = httpx.get(base + PATH, timeout=30).json()
        t0 = time.perf_counter()
        httpx.get(base + PATH, timeout=30)
        single = (time.perf_counter() - t0) * 1000
        print(f"one request alone: {single:.1f} ms")
        print(f"leaderboard: {len(board['rows'])} rows, {len(httpx.get(base + PATH, timeout=30).content)} bytes")

        results = [asyncio.run(constant_rate(base, rate=args.rate, seconds=args.seconds)) for _ in range(args.runs)]
        print(
            f"\nconstant rate {args.rate:.0f} req/s for {args.seconds:.0f} s, {args.runs} runs"
            " (latency in ms from each request's due time)"
        )
        keys = ["failed", "achieved_rps", "p50", "p90", "p99", "max"]
        print("run  " + "".join(f"{k:>14}" for k in keys))
        for i, r in enumerate(results, 1):
            print(f"{i:<5}" + "".join(f"{r[k]:>14.1f}" for k in keys))
        print("med  " + "".join(f"{statistics.median(r[k] for r in results):>14.1f}" for k in keys))
        p99 = statistics.median(r["p99"] for r in results)
        print(f"\nmedian p99 {p99:.1f} ms: {'PASS' if p99 < 100 else 'FAIL'} (goal < 100 ms at {args.rate:.0f} req/s)")
        if args.wrk:
            if shutil.which("wrk") is None:
                print("wrk is not installed (apt-get install -y wrk)")
            else:
                print(
                    "\nwrk, closed loop, 2 threads, 16 connections, 10 s:\n" + run_wrk(base, seconds=10, connections=16)
                )
    finally:
        if api is not None:
            os.killpg(api.pid, signal.SIGKILL)
            api.wait(timeout=30)
        drop_pg_database(database)
        shutil.rmtree(tmp, ignore_errors=True)


def _up(url: str) -> bool:
    try:
        return httpx.get(url + PATH, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


if __name__ == "__main__":
    main()
