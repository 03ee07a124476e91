"""The organisers' view of submissions (issue 32, item 2): filters, paging, phase, team, state, failure category,
queue wait and run time, the failures by category; the API and the page."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.orm import Session

from .conftest import Account
from .term import HOSTILE, Term, make_term

VIEW = "/api/v1/admin/submissions"


@pytest.fixture
def term(db: Session, organiser: Account) -> Term:
    return make_term(db, organiser.user)


def labels(term: Term, body: dict[str, Any]) -> list[str]:
    by_id = {v: k for k, v in term.ids.items()}
    return [by_id[row["id"]] for row in body["data"]]


def test_every_submission_newest_first_with_phase_team_state_category_wait_and_run(
    client: Any, organiser: Account, term: Term
) -> None:
    body = client.get(VIEW, headers=organiser.headers).json()
    assert body["count"] == 8
    assert labels(term, body) == [
        "ada-cancelled", "ben-running", "cyd-queued", "ada-bundle", "cyd-lost", "cyd-timeout", "ben-scored",
        "ada-scored",
    ]  # fmt: skip
    rows = {row["id"]: row for row in body["data"]}
    scored = rows[term.ids["ada-scored"]]
    assert (scored["phase"], scored["team"], scored["state"], scored["category"]) == (
        "final",
        "owls",
        "succeeded",
        None,
    )
    assert (scored["wait_s"], scored["run_s"], scored["score"]) == (30.0, 60.0, 0.82)
    timeout = rows[term.ids["cyd-timeout"]]
    assert (timeout["team"], timeout["state"], timeout["category"], timeout["service_failure"]) == (
        None, "failed", "timeout", False,
    )  # fmt: skip
    lost = rows[term.ids["cyd-lost"]]
    assert (lost["phase"], lost["category"], lost["service_failure"], lost["run_s"]) == (
        "main", "infrastructure", True, 600.0,
    )  # fmt: skip
    queued = rows[term.ids["cyd-queued"]]
    assert queued["started_at"] is None and queued["wait_s"] >= 0 and queued["run_s"] is None
    assert rows[term.ids["ada-cancelled"]]["wait_s"] is None  # cancelled before it started
    assert body["summary"] == {
        "states": {"queued": 1, "running": 1, "succeeded": 2, "failed": 3, "cancelled": 1},
        "failures": {"infrastructure_error": 2, "infrastructure": 1, "invalid_bundle": 1, "timeout": 1},
    }


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("phase=final", ["ben-running", "cyd-queued", "cyd-timeout", "ben-scored", "ada-scored"]),
        ("state=failed", ["ada-bundle", "cyd-lost", "cyd-timeout"]),
        ("owner=cyd", ["cyd-queued", "cyd-lost", "cyd-timeout"]),
        ("team=owls", ["ada-cancelled", "ben-running", "ada-bundle", "ben-scored", "ada-scored"]),
        ("category=timeout", ["cyd-timeout"]),
        ("state=failed&category=infrastructure_error", ["ada-bundle", "cyd-lost"]),
        ("phase=main&state=failed&category=infrastructure_error", ["ada-bundle", "cyd-lost"]),
        ("since=2027-02-01T09:00:25Z&phase=final&state=failed", []),
        ("since=2027-02-01T09:00:20Z&state=failed", ["ada-bundle", "cyd-lost", "cyd-timeout"]),
        ("owner=ada&limit=1&offset=1", ["ada-bundle"]),
    ],
    ids=["phase", "state", "owner", "team", "category", "service", "phase-state-service", "since-none", "since",
         "paging"],
)  # fmt: skip
def test_filters(client: Any, organiser: Account, term: Term, query: str, expected: list[str]) -> None:
    response = client.get(f"{VIEW}?{query}", headers=organiser.headers)
    assert response.status_code == 200, response.text
    assert labels(term, response.json()) == expected


@pytest.mark.parametrize(
    ("query", "status", "message"),
    [
        ("phase=nope", 404, "phase 'nope' does not exist"),
        ("owner=nobody", 404, "user 'nobody' does not exist"),
        ("team=nope", 404, "team 'nope' does not exist"),
        ("state=lost", 422, "query.state: Input should be 'queued', 'running', 'succeeded', 'failed' or 'cancelled' "
         "(got 'lost')"),
        ("since=2027-02-01T09:00", 422, "query.since: Input should have timezone info (got '2027-02-01T09:00')"),
    ],
    ids=["phase", "owner", "team", "state", "naive-since"],
)  # fmt: skip
def test_a_bad_filter_names_its_value(
    client: Any, organiser: Account, term: Term, query: str, status: int, message: str
) -> None:
    response = client.get(f"{VIEW}?{query}", headers=organiser.headers)
    assert response.status_code == status
    assert response.json()["error"]["message"] == message


def test_the_organisers_page(client: Any, organiser: Account, alice: Account, term: Term) -> None:
    page = client.get("/admin/submissions?state=failed&phase=&owner=", headers=organiser.headers)
    assert page.status_code == 200
    text = page.text
    assert '<table id="submissions">' in text and "3 match." in text
    assert '<table id="failures">' in text and ">infrastructure_error <span" in text
    assert "1 min 0 s" in client.get("/admin/submissions?owner=ada&phase=final", headers=organiser.headers).text
    everything = client.get("/admin/submissions", headers=organiser.headers).text
    assert "&lt;script&gt;" in everything and HOSTILE not in everything  # the name is text, not markup
    bad = client.get("/admin/submissions?team=nope", headers=organiser.headers)
    assert bad.status_code == 404 and "team &#39;nope&#39; does not exist" in bad.text
    naive = client.get("/admin/submissions?since=yesterday", headers=organiser.headers)
    assert naive.status_code == 422 and "since: " in naive.text
    paged = client.get("/admin/submissions?limit=3&team=owls", headers=organiser.headers).text
    assert 'href="/admin/submissions?team=owls&amp;offset=3&amp;limit=3">Older</a>' in paged

    refused = client.get("/admin/submissions", headers=alice.headers)
    assert refused.status_code == 403 and "this page is for organisers" in refused.text
    anonymous = client.get("/admin/submissions")
    assert anonymous.status_code == 401 and "<h2>Sign in</h2>" in anonymous.text
