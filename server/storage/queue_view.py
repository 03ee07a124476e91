"""Where a queued evaluation stands: its place in the students' queue and an estimate of when it starts and ends,
from recent run times and the workers alive (their heartbeats, written by each worker's reconciler).

The students' queue is every queued evaluation but audits (which have a queue of their own), oldest first, as the
broker hands them out. The estimate: the work ahead (each queued evaluation's typical run time on its set, plus what
the running ones have left) shared by the workers alive, then the evaluation's own typical run time. A typical run
time is the median of the last evaluations that ended on that set (at least ``MIN_SAMPLES``, else of every set), so
no single evaluation's duration shows through it.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections import Counter
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from layersched.server.models import Evaluation, WorkerHeartbeat

RECENT = 50  # evaluations per set whose run times make its typical one
MIN_SAMPLES = 3


@dataclass(frozen=True)
class QueuePlace:
    position: int  # 1: next to start
    queued: int  # evaluations in the queue now
    workers: int  # workers alive
    starts_in_s: float | None  # None: no recent run time to estimate from
    done_in_s: float | None


@dataclass
class QueueSnapshot:
    """The students' queue as it is now, read once for every queued submission a response shows."""

    order: list[int] = field(default_factory=list)  # queued evaluation ids, oldest first
    sets: dict[int, str] = field(default_factory=dict)  # evaluation id -> its set
    running_left: float = 0.0  # seconds the running evaluations have left, summed
    typical: dict[str, float] = field(default_factory=dict)  # set -> typical run time in seconds
    fallback: float | None = None  # typical run time over every set
    workers: int = 1

    def _run(self, evalset: str) -> float | None:
        return self.typical.get(evalset, self.fallback)

    def place(self, evaluation_id: int) -> QueuePlace | None:
        """The place of a queued evaluation, or None when it is not in the queue (started, ended, an audit)."""
        try:
            index = self.order.index(evaluation_id)
        except ValueError:
            return None
        ahead = [self._run(self.sets[e]) for e in self.order[:index]]
        own = self._run(self.sets[evaluation_id])
        if own is None or any(a is None for a in ahead):
            starts, done = None, None
        else:
            starts = round((self.running_left + sum(a for a in ahead if a is not None)) / self.workers)
            done = starts + round(own)
        return QueuePlace(index + 1, len(self.order), self.workers, starts, done)


def workers_alive(*, session: Session, now: dt.datetime, within: dt.timedelta) -> int:
    return len(session.scalars(select(WorkerHeartbeat.id).where(WorkerHeartbeat.beat_at >= now - within)).all())


def queue_snapshot(*, session: Session, now: dt.datetime, alive_within: dt.timedelta) -> QueueSnapshot:
    snapshot = QueueSnapshot()
    queued = session.execute(
        select(Evaluation.id, Evaluation.evalset_name)
        .where(Evaluation.state == "queued", Evaluation.kind != "audit")
        .order_by(Evaluation.id)
    )
    for evaluation_id, evalset in queued:
        snapshot.order.append(evaluation_id)
        snapshot.sets[evaluation_id] = evalset
    if not snapshot.order:
        return snapshot
    ended = session.execute(
        select(Evaluation.evalset_name, Evaluation.started_at, Evaluation.finished_at)
        .where(
            Evaluation.kind != "audit",
            Evaluation.state.in_(("succeeded", "failed")),
            Evaluation.started_at.is_not(None),
            Evaluation.finished_at.is_not(None),
        )
        .order_by(Evaluation.id.desc())
        .limit(RECENT * 10)
    )
    runs: dict[str, list[float]] = {}
    for evalset, started, finished in ended:
        if started is None or finished is None:  # the query keeps none of these; the types do not know it
            continue
        if len(runs.setdefault(evalset, [])) < RECENT:
            runs[evalset].append((finished - started).total_seconds())
    snapshot.typical = {s: statistics.median(r) for s, r in runs.items() if len(r) >= MIN_SAMPLES}
    every = [d for r in runs.values() for d in r]
    snapshot.fallback = statistics.median(every) if len(every) >= MIN_SAMPLES else None
    running = session.execute(
        select(Evaluation.evalset_name, Evaluation.started_at).where(
            Evaluation.state == "running", Evaluation.kind != "audit"
        )
    )
    busy = Counter[str]()
    for evalset, started in running:
        busy[evalset] += 1
        typical = snapshot._run(evalset) or 0.0
        elapsed = (now - started).total_seconds() if started is not None else 0.0
        snapshot.running_left += max(typical - elapsed, 0.0)
    alive = workers_alive(session=session, now=now, within=alive_within)
    snapshot.workers = max(alive, sum(busy.values()), 1)
    return snapshot


def beat(*, session: Session, worker_id: str, now: dt.datetime) -> None:
    """Record that the worker ``worker_id`` is alive now (one upsert)."""
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(WorkerHeartbeat).values(worker_id=worker_id, started_at=now, beat_at=now)
    session.execute(statement.on_conflict_do_update(index_elements=["worker_id"], set_={"beat_at": now}))
    session.commit()


def forget_worker(*, session: Session, worker_id: str) -> None:
    """A worker that stops says so: it is not counted alive until its heartbeat would have gone stale."""
    session.query(WorkerHeartbeat).filter(WorkerHeartbeat.worker_id == worker_id).delete()
    session.commit()
