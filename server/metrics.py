"""Prometheus metrics, computed from the database and the broker at scrape time (so any API replica is right)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from kombu.exceptions import OperationalError
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from layersched.server.models import EVALUATION_STATES, Evaluation
from layersched.server.queue import QUEUES, queue_depths

DURATION_BUCKETS = (1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)


class ServiceCollector(Collector):
    def __init__(self, factory: sessionmaker[Session], broker_url: str) -> None:
        self.factory = factory
        self.broker_url = broker_url

    def collect(self) -> Iterator[Metric]:
        with self.factory() as session:
            rows = session.execute(
                select(
                    Evaluation.submission_id,
                    Evaluation.id,
                    Evaluation.kind,
                    Evaluation.state,
                    Evaluation.started_at,
                    Evaluation.finished_at,
                ).order_by(Evaluation.id)
            ).all()
        latest: dict[int, str] = {}
        evaluations: Counter[tuple[str, str]] = Counter()
        durations: list[float] = []
        for submission_id, _id, kind, state, started, finished in rows:
            if kind != "audit":
                latest[submission_id] = state
            evaluations[(kind, state)] += 1
            if started is not None and finished is not None and state in ("succeeded", "failed"):
                durations.append((finished - started).total_seconds())

        by_state = Counter(latest.values())
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

        buckets = [(f"{b:g}", sum(1 for d in durations if d <= b)) for b in DURATION_BUCKETS]
        buckets.append(("+Inf", len(durations)))
        yield HistogramMetricFamily(
            "layersched_evaluation_duration_seconds",
            "Wall time of finished evaluations, start to finish",
            buckets=buckets,
            sum_value=sum(durations),
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
