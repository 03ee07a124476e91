"""Benchmark: one Prometheus scrape of ``/metrics`` against a database of many evaluations (issue 30 item 5).

A fresh PostgreSQL database gets 100 participants, ``--evaluations`` evaluations (half of them initial evaluations of
as many submissions, the rest reruns and audits of those; most succeeded, some failed or cancelled, a few queued or
running, with start and finish times), inserted in bulk. Each repeat runs the service's collector as a scrape does
(``ServiceCollector.collect``, the real Redis at 127.0.0.1:6379 for the queue depths) and times it; the figure is
the median. It also counts the rows the database sends back per scrape: reading every evaluation row into Python
(the review measured 133 ms at 20,000) is what the scrape must not do.

Run: ``python benchmarks/bench_metrics.py [--evaluations 20000] [--repeats 21]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import event, insert, select

from layersched.server import storage
from layersched.server.admin import upgrade_database
from layersched.server.config import Settings
from layersched.server.db import make_engine, make_sessionmaker
from layersched.server.metrics import ServiceCollector
from layersched.server.models import Evaluation, Submission, User
from tests.server.conftest import PG_URL, SCENARIOS, create_pg_database, drop_pg_database

BROKER = "redis://127.0.0.1:6379/14"


def populate(url: str, *, evaluations: int, participants: int = 100, seed: int = 0) -> None:
    rng = random.Random(seed)
    engine = make_engine(url)
    with make_sessionmaker(engine)() as session:
        evalset = storage.register_evalset(
            session=session, name="sample", commitment="c" * 64, path="hidden_seeds/sample.toml", scenarios=SCENARIOS
        )
        phase = storage.get_phase(session=session, name="main")
        session.execute(
            insert(User),
            [{"name": f"p{i:04d}", "email": f"p{i:04d}@x.org", "role": "participant"} for i in range(participants)],
        )
        owners = list(session.scalars(select(User.id).order_by(User.id)))
        start = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
        submissions = evaluations // 2
        session.execute(
            insert(Submission),
            [
                {
                    "owner_id": owners[i % participants],
                    "name": f"policy {i}",
                    "description": "",
                    "bundle_sha256": f"{i:064x}",
                    "bundle_format": "py",
                    "bundle_bytes": 100,
                    "created_at": start + dt.timedelta(minutes=i),
                    "selected": False,
                    "counts_against_quota": True,
                    "phase_id": phase.id,
                }
                for i in range(submissions)
            ],
        )
        ids = list(session.scalars(select(Submission.id).order_by(Submission.id)))
        rows: list[dict[str, Any]] = []
        for i in range(evaluations):
            kind = "initial" if i < submissions else rng.choice(("rerun", "rerun", "audit"))
            state = rng.choices(("succeeded", "failed", "cancelled", "queued", "running"), (80, 12, 4, 2, 2))[0]
            began = start + dt.timedelta(minutes=i)
            finished = state in ("succeeded", "failed", "cancelled")
            rows.append(
                {
                    "submission_id": ids[i % submissions],
                    "kind": kind,
                    "evalset_name": "sample",
                    "evalset_commitment": evalset.commitment,
                    "state": state,
                    "progress_done": 8 if finished else 3,
                    "progress_total": 8,
                    "attempts": 1,
                    "created_at": began,
                    "started_at": None if state == "queued" else began,
                    "finished_at": began + dt.timedelta(seconds=rng.uniform(1, 900)) if finished else None,
                    "score_public": {"overall": 1.0} if state == "succeeded" else None,
                }
            )
        session.execute(insert(Evaluation), rows)
        session.commit()
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--evaluations", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args()

    name = create_pg_database()
    url = PG_URL.format(name=name)
    try:
        upgrade_database(settings=Settings(database_url=url, _env_file=None))  # type: ignore[call-arg]
        populate(url, evaluations=args.evaluations)
        engine = make_engine(url)
        fetched = [0]

        @event.listens_for(engine, "after_cursor_execute")
        def _count(_conn: Any, cursor: Any, *_args: Any) -> None:
            fetched[0] += max(cursor.rowcount, 0)

        # Fresh statistics and visibility map, as autovacuum keeps them on a live server.
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE")
        collector = ServiceCollector(make_sessionmaker(engine), BROKER)
        list(collector.collect())  # warm: connection, statement cache
        times = []
        for _ in range(args.repeats):
            fetched[0] = 0
            began = time.perf_counter()
            families = list(collector.collect())
            times.append(time.perf_counter() - began)
        series = sum(len(f.samples) for f in families)
        print(
            f"{args.evaluations} evaluations: scrape median {statistics.median(times) * 1000:.1f} ms "
            f"(min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f}, {args.repeats} scrapes); "
            f"{fetched[0]} rows from the database per scrape; {series} samples"
        )
        engine.dispose()
    finally:
        drop_pg_database(name)


if __name__ == "__main__":
    main()
