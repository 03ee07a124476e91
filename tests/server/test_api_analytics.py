"""The organisers' analytics (issue 32, item 4): the figures from the database and the broker, the API and the
page (the browser test is tests/server/test_browser_analytics.py)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from sqlalchemy.orm import Session

from layersched.server.models import utcnow
from layersched.server.storage.analytics import analytics, percentile
from layersched.server.storage.queue_view import beat

from .conftest import Account
from .term import T0, Term, make_term


@pytest.fixture
def term(db: Session, organiser: Account) -> Term:
    return make_term(db, organiser.user)


def test_the_figures_of_a_term(db: Session, term: Term) -> None:
    beat(session=db, worker_id="host:1", now=T0 + dt.timedelta(minutes=59))
    beat(session=db, worker_id="host:2", now=T0 - dt.timedelta(hours=2))
    figures = analytics(session=db, now=T0 + dt.timedelta(hours=1), days=2, alive_within=dt.timedelta(minutes=2))
    assert figures.days == ["2027-01-31", "2027-02-01"] and figures.phases == ["main", "final"]
    assert figures.submissions == {"2027-02-01": {"final": 3, "main": 2}}
    assert figures.ended == 5 and figures.service_failures == 2
    assert [(f.category, f.count, f.rate) for f in figures.failures] == [
        ("infrastructure", 1, 0.2), ("invalid_bundle", 1, 0.2), ("timeout", 1, 0.2),
    ]  # fmt: skip
    day = figures.timing[1]
    # Waits 5, 10, 10, 30, 30 s; run times 1, 10, 60, 120, 600 s.
    assert (day.day, day.evaluations, day.wait_p50, day.wait_p95, day.run_p50, day.run_p95) == (
        "2027-02-01", 5, 10.0, 30.0, 60.0, pytest.approx(504.0),
    )  # fmt: skip
    assert figures.timing[0].evaluations == 0 and figures.timing[0].run_p50 is None
    assert (figures.queued, figures.running) == (1, 1)
    assert [(w.worker_id, w.alive) for w in figures.workers] == [("host:1", True), ("host:2", False)]
    assert figures.best == {"final": [("2027-01-31", None), ("2027-02-01", 0.82)]}


def test_percentiles() -> None:
    assert percentile([], 0.5) is None
    assert percentile([4.0], 0.95) == 4.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert percentile([float(i) for i in range(101)], 0.95) == 95.0


def test_the_api_and_the_page(client: Any, organiser: Account, alice: Account, term: Term, db: Session) -> None:
    beat(session=db, worker_id="host:1", now=utcnow())
    body = client.get("/api/v1/admin/analytics?days=7", headers=organiser.headers).json()
    assert len(body["days"]) == 7 and body["days"][-1] == utcnow().date().isoformat()
    assert (body["queued"], body["running"]) == (1, 1)
    assert body["broker_queues"] is not None and set(body["broker_queues"]) == {"evaluations", "audits"}
    assert [w["worker_id"] for w in body["workers"] if w["alive"]] == ["host:1"]
    # The term's evaluations ended on 2027-02-01 (ahead of the clock): none is in this window.
    assert body["ended"] == 0 and body["submissions"][body["days"][-1]] == {"final": 2, "main": 1}
    assert client.get("/api/v1/admin/analytics?days=91", headers=organiser.headers).status_code == 422

    page = client.get("/admin/analytics", headers=organiser.headers)
    assert page.status_code == 200
    for anchor in ('id="queued">1<', 'id="running">1<', 'id="workers-alive">1<', '<table id="per-day">',
                   '<table id="timing">', 'class="submissions-chart"', 'class="best-chart"'):  # fmt: skip
        assert anchor in page.text, anchor
    assert "<script" not in page.text
    refused = client.get("/admin/analytics", headers=alice.headers)
    assert refused.status_code == 403 and "this page is for organisers" in refused.text
    assert client.get("/admin/analytics").status_code == 401


def test_no_worker_alive_is_said_plainly(client: Any, organiser: Account) -> None:
    page = client.get("/admin/analytics", headers=organiser.headers).text
    assert 'id="workers-alive">0<' in page and "no worker is alive: nothing is being evaluated" in page
