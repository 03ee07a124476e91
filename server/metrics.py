"""Prometheus metrics, computed from the database and the broker at scrape time (so any API replica is right).

A scrape is three aggregate queries that the database answers from indexes alone (index-only scans) and that send
back one row per series (a few dozen, whatever the number of evaluations), never the evaluation rows themselves:
reading every row into Python took 133 ms at 20,000 evaluations (issue 30), at each scrape, for whoever asked. The
database's work still grows with the evaluations, by index entries (``benchmarks/bench_metrics.py``). The route
(``routes/health``) serves them to organisers' tokens only: the counts show when organisers queue reruns and audits.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

from kombu.exceptions import OperationalError
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import ColumnElement, exists, func, select
from sqlalchemy.orm import Session, aliased, sessionmaker

from layersched.server.models import EVALUATION_STATES, Evaluation
from layersched.server.queue import QUEUES, queue_depths

DURATION_BUCKETS = (1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)


def evaluation_counts(session: Session) -> dict[tuple[str, str], int]:
    """Evaluations by (kind, state): an index-only count (``ix_evaluations_kind_state``)."""
    rows = session.execute(
        select(Evaluation.kind, Evaluation.state, func.count()).group_by(Evaluation.kind, Evaluation.state)
    )
    return {(kind, state): count for kind, state, count in rows}


def submission_states(session: Session) -> dict[str, int]:
    """Submissions by the state of their newest evaluation that is not an audit (its newest result): the
    evaluations with no newer one of their submission, an anti-join on ``ix_evaluations_newest``."""
    newer = aliased(Evaluation)
    superseded = exists().where(
        newer.submission_id == Evaluation.submission_id, newer.kind != "audit", newer.id > Evaluation.id
    )
    rows = session.execute(
        select(Evaluation.state, func.count()).where(Evaluation.kind != "audit", ~superseded).group_by(Evaluation.state)
    )
    return {state: count for state, count in rows}


def duration_histogram(session: Session) -> tuple[list[int], int, float]:
    """Of the evaluations that succeeded or failed: how many took at most each of ``DURATION_BUCKETS`` seconds,
    how many there are, and their total seconds (``ix_evaluations_durations`` covers the columns read)."""
    took: ColumnElement[Any]
    bounds: list[Any]
    if session.get_bind().dialect.name == "sqlite":
        took = (func.julianday(Evaluation.finished_at) - func.julianday(Evaluation.started_at)) * 86400.0
        bounds = list(DURATION_BUCKETS)
    else:  # PostgreSQL's intervals, compared and summed as they are: a conversion per row cost 5x more
        took = Evaluation.finished_at - Evaluation.started_at
        bounds = [dt.timedelta(seconds=bound) for bound in DURATION_BUCKETS]
    finished = (
        select(took.label("took"))
        .where(
            Evaluation.state.in_(("succeeded", "failed")),
            Evaluation.started_at.is_not(None),
            Evaluation.finished_at.is_not(None),
        )
        .subquery()
    )
    counts = [func.count().filter(finished.c.took <= bound) for bound in bounds]
    *buckets, count, total = session.execute(select(*counts, func.count(), func.sum(finished.c.took))).one()
    seconds = total.total_seconds() if isinstance(total, dt.timedelta) else float(total or 0.0)
    return [int(b) for b in buckets], int(count), seconds


class ServiceCollector(Collector):
    def __init__(self, factory: sessionmaker[Session], broker_url: str) -> None:
        self.factory = factory
        self.broker_url = broker_url

    def collect(self) -> Iterator[Metric]:
        with self.factory() as session:
            evaluations = evaluation_counts(session)
            by_state = submission_states(session)
            buckets, finished, total_seconds = duration_histogram(session)

        submissions = GaugeMetricFamily(
            "layersched_submissions", "Submissions by the state of their newest evaluation", labels=["state"]
        )
        for state in EVALUATION_STATES:
            submissions.add_metric([state], by_state.get(state, 0))
        yield submissions

        per_kind = GaugeMetricFamily(
            "layersched_evaluations", "Evaluations by kind and state", labels=["kind", "state"]
        )
        for (kind, state), count in sorted(evaluations.items()):
            per_kind.add_metric([kind, state], count)
        yield per_kind

        yield HistogramMetricFamily(
            "layersched_evaluation_duration_seconds",
            "Wall time of finished evaluations, start to finish",
            buckets=[*((f"{b:g}", n) for b, n in zip(DURATION_BUCKETS, buckets, strict=True)), ("+Inf", finished)],
            sum_value=total_seconds,
        )

        up = GaugeMetricFamily("layersched_broker_up", "1 if the broker answered this scrape")
        depth = GaugeMetricFamily("layersched_queue_depth", "Messages waiting in each queue", labels=["queue"])
        try:
            depths = queue_depths(self.broker_url, timeout=1.0)
        except (OperationalError, OSError):
            up.add_metric([], 0)
        else:
            up.add_metric([], 1)
            for queue in QUEUES:
                depth.add_metric([queue], depths[queue])
        yield up
        yield depth
