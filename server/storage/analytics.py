"""What the organisers' analytics page reads: submissions per day and phase, failures by category, queue wait and
run time per day (p50, p95), the queue now, the workers' heartbeats and the best public score of each phase over time.

Days are UTC days. The counts are aggregated in SQL; only the per-day percentiles read one row per evaluation of the
window (two timestamps and a date), since SQLite has no percentile function.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from layersched.server.models import Evaluation, Phase, Submission, User, WorkerHeartbeat


def _day(session: Session, column: Any) -> ColumnElement[Any]:
    """The UTC day of a timestamp column: a date on PostgreSQL, ``YYYY-MM-DD`` text on SQLite (``_label`` makes
    both text)."""
    if session.get_bind().dialect.name == "postgresql":
        return func.date(func.timezone("UTC", column))
    return func.strftime("%Y-%m-%d", column)  # SQLite keeps UTC timestamps as text


def _label(day: Any) -> str:
    return day.isoformat() if isinstance(day, dt.date) else str(day)


def percentile(sorted_values: list[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) by linear interpolation between closest ranks; None for no values."""
    if not sorted_values:
        return None
    position = (len(sorted_values) - 1) * q
    low, high = math.floor(position), math.ceil(position)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


@dataclass(frozen=True)
class DayTiming:
    day: str
    evaluations: int
    wait_p50: float | None
    wait_p95: float | None
    run_p50: float | None
    run_p95: float | None


@dataclass(frozen=True)
class Failure:
    category: str
    count: int
    rate: float  # of the evaluations that ended in the window


@dataclass(frozen=True)
class Worker:
    worker_id: str
    started_at: dt.datetime
    beat_at: dt.datetime
    alive: bool


@dataclass
class Analytics:
    days: list[str]
    phases: list[str]
    submissions: dict[str, dict[str, int]] = field(default_factory=dict)  # day -> phase -> count
    ended: int = 0
    failures: list[Failure] = field(default_factory=list)
    service_failures: int = 0
    timing: list[DayTiming] = field(default_factory=list)
    queued: int = 0
    running: int = 0
    oldest_queued_s: float | None = None
    workers: list[Worker] = field(default_factory=list)
    best: dict[str, list[tuple[str, float | None]]] = field(default_factory=dict)  # phase -> (day, best so far)


def analytics(*, session: Session, now: dt.datetime, days: int, alive_within: dt.timedelta) -> Analytics:
    first = (now - dt.timedelta(days=days - 1)).astimezone(dt.timezone.utc).replace(hour=0, minute=0, second=0,
                                                                                 microsecond=0)  # fmt: skip
    end = first + dt.timedelta(days=days)
    labels = [(first + dt.timedelta(days=i)).date().isoformat() for i in range(days)]
    phases = list(session.scalars(select(Phase.name).order_by(Phase.opens_at, Phase.id)))
    result = Analytics(days=labels, phases=phases)

    day = _day(session, Submission.created_at)
    per_day = session.execute(
        select(day, Phase.name, func.count(Submission.id))
        .join(Phase, Phase.id == Submission.phase_id)
        .where(Submission.created_at >= first, Submission.created_at < end)
        .group_by(day, Phase.name)
    )
    for label, phase, count in per_day:
        result.submissions.setdefault(_label(label), {})[phase] = count

    in_window = (Evaluation.kind != "audit", Evaluation.finished_at >= first, Evaluation.finished_at < end)
    ended = session.execute(
        select(
            Evaluation.state, Evaluation.error_category, Evaluation.infrastructure_failure, func.count(Evaluation.id)
        )
        .where(*in_window, Evaluation.state.in_(("succeeded", "failed")))
        .group_by(Evaluation.state, Evaluation.error_category, Evaluation.infrastructure_failure)
    )
    by_category: dict[str, int] = defaultdict(int)
    for state, category, service, count in ended:
        result.ended += count
        if state == "failed":
            by_category[category or "unknown"] += count
            result.service_failures += count if service else 0
    result.failures = [
        Failure(category, count, count / result.ended)
        for category, count in sorted(by_category.items(), key=lambda kv: (-kv[1], kv[0]))
    ]

    result.timing = _timing(session, labels, first, end)

    active = session.execute(
        select(Evaluation.state, func.count(Evaluation.id), func.min(Evaluation.created_at))
        .where(Evaluation.kind != "audit", Evaluation.state.in_(("queued", "running")))
        .group_by(Evaluation.state)
    )
    for state, count, oldest in active:
        if state == "queued":
            result.queued, result.oldest_queued_s = count, (now - oldest).total_seconds()
        else:
            result.running = count

    for worker_id, started, beat_at in session.execute(
        select(WorkerHeartbeat.worker_id, WorkerHeartbeat.started_at, WorkerHeartbeat.beat_at).order_by(
            WorkerHeartbeat.worker_id
        )
    ):
        result.workers.append(Worker(worker_id, started, beat_at, beat_at >= now - alive_within))

    result.best = _best_over_time(session, labels, first)
    return result


def _timing(session: Session, labels: list[str], first: dt.datetime, end: dt.datetime) -> list[DayTiming]:
    """Per day (of the start), the evaluations that started and their queue wait and run time, p50 and p95: by
    PostgreSQL's ``percentile_cont`` there, in Python from one row per evaluation on SQLite (which has none)."""
    day = _day(session, Evaluation.started_at)
    window = (Evaluation.kind != "audit", Evaluation.started_at >= first, Evaluation.started_at < end)
    if session.get_bind().dialect.name == "postgresql":
        wait = func.greatest(func.extract("epoch", Evaluation.started_at - Evaluation.created_at), 0)
        run = func.extract("epoch", Evaluation.finished_at - Evaluation.started_at)
        rows = session.execute(
            select(
                day,
                func.count(Evaluation.id),
                *(func.percentile_cont(q).within_group(wait) for q in (0.5, 0.95)),
                *(func.percentile_cont(q).within_group(run) for q in (0.5, 0.95)),
            )
            .where(*window)
            .group_by(day)
        )
        found = {
            _label(day_of): DayTiming(_label(day_of), n, *(float(v) if v is not None else None for v in qs))
            for day_of, n, *qs in rows
        }
        return [found.get(label, DayTiming(label, 0, None, None, None, None)) for label in labels]
    timed = session.execute(
        select(day, Evaluation.created_at, Evaluation.started_at, Evaluation.finished_at).where(*window)
    )
    waits: dict[str, list[float]] = defaultdict(list)
    runs: dict[str, list[float]] = defaultdict(list)
    for day_of, created, started, finished in timed:
        label = _label(day_of)
        waits[label].append(max((started - created).total_seconds(), 0.0))
        if finished is not None:
            runs[label].append((finished - started).total_seconds())
    timing = []
    for label in labels:
        w, r = sorted(waits.get(label, [])), sorted(runs.get(label, []))
        timing.append(
            DayTiming(label, len(w), percentile(w, 0.5), percentile(w, 0.95), percentile(r, 0.5), percentile(r, 0.95))
        )
    return timing


def _best_over_time(
    session: Session, labels: list[str], first: dt.datetime
) -> dict[str, list[tuple[str, float | None]]]:
    """Per phase, the best (lowest) public score of a ranked-kind submission made up to each day of the window:
    participants only, enabled, not disqualified, scored on the phase's set."""
    overall = Evaluation.score_public["overall"].as_float()
    day = _day(session, Submission.created_at)
    scored = (
        select(Phase.name, day.label("day"), func.min(overall))
        .join(Submission, Submission.id == Evaluation.submission_id)
        .join(Phase, Phase.id == Submission.phase_id)
        .join(User, User.id == Submission.owner_id)
        .where(
            Evaluation.kind != "audit",
            Evaluation.state == "succeeded",
            User.role == "participant",
            User.disabled_at.is_(None),
            Submission.disqualified_reason.is_(None),
        )
        .group_by(Phase.name, day)
    )
    daily: dict[str, dict[str, float]] = defaultdict(dict)
    for phase, day_of, best in session.execute(scored):
        if best is not None:  # a succeeded evaluation without a public score (an old row): nothing to show
            daily[phase][_label(day_of)] = best
    start = first.date().isoformat()
    series: dict[str, list[tuple[str, float | None]]] = {}
    for phase, values in daily.items():
        before = [v for d, v in values.items() if d < start]
        best_so_far = min(before) if before else None
        points = []
        for label in labels:
            if label in values:
                best_so_far = values[label] if best_so_far is None else min(best_so_far, values[label])
            points.append((label, best_so_far))
        series[phase] = points
    return series
