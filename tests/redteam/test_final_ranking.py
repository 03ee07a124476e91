"""The final (private) ranking against a participant who probes it, on the real app and PostgreSQL (finding 4).

Kaggle's rules: a participant's final score is the best private score among the submissions they selected (at most
``Settings.final_submissions``; with none selected, among their that many best public ones), so nobody is ranked on
a choice made with the hidden split; uploads and selection changes close at the deadline and at publication; the
published private board is the snapshot taken at publication, which nothing done afterwards moves.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy.orm import Session
from starlette.testclient import TestClient

from layersched.server.app import create_app
from layersched.server.config import Settings
from layersched.server.models import Submission
from tests.server.conftest import Account, Captured, run_evaluation, submit

pytestmark = pytest.mark.postgres


def scored(client: TestClient, account: Account, db: Session, public: float, private: float, name: str) -> int:
    body = submit(client, account, name=name).json()
    run_evaluation(db, body["evaluations"][0]["id"], public=public, private=private)
    return int(body["id"])


def private_rows(client: TestClient, headers: dict[str, str] | None = None) -> list[tuple[Any, ...]]:
    board = client.get("/api/v1/leaderboard?split=private", headers=headers or {}).json()
    return [(r["participant"], r["submission_name"], r["score"]) for r in board["rows"]]


def error(response: Any) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["message"]


@pytest.fixture
def daily(settings: Settings) -> Settings:
    """Room for the several submissions a test makes in one day."""
    return settings.model_copy(update={"daily_quota": 20, "max_in_flight": 20})


@pytest.fixture
def app_client(daily: Settings, enqueued: Captured) -> Iterator[TestClient]:
    with TestClient(create_app(daily, enqueuer=enqueued)) as test_client:
        yield test_client


def test_final_score_is_not_the_best_private_score(
    app_client: TestClient, alice: Account, bob: Account, organiser: Account, db: Session
) -> None:
    # alice's luckiest private score (0.70) sits on a submission she would never have picked by its public score.
    scored(app_client, alice, db, 0.80, 1.10, "a-best-public")
    scored(app_client, alice, db, 0.95, 0.70, "a-lucky-private")
    scored(app_client, alice, db, 0.90, 1.00, "a-second-public")
    scored(app_client, bob, db, 0.92, 0.98, "b")
    # Nothing selected: her two best public submissions count, and the better of their private scores.
    assert private_rows(app_client, organiser.headers) == [
        ("bob", "b", 0.98),
        ("alice", "a-second-public", 1.00),
    ]


def test_selected_submissions_decide_the_final_score(
    app_client: TestClient, alice: Account, organiser: Account, db: Session
) -> None:
    first = scored(app_client, alice, db, 0.80, 1.02, "first")
    scored(app_client, alice, db, 0.85, 0.60, "unselected")
    third = scored(app_client, alice, db, 0.95, 1.05, "third")
    for submission_id in (first, third):
        assert app_client.post(f"/api/v1/submissions/{submission_id}/select", headers=alice.headers).status_code == 200
    # The better private score of the two selected, whatever the unselected one scored.
    assert private_rows(app_client, organiser.headers) == [("alice", "first", 1.02)]


def test_published_private_board_is_a_snapshot(
    app_client: TestClient, alice: Account, bob: Account, organiser: Account, db: Session
) -> None:
    """The review's reproduction: after freeze and publish, re-selecting moved a published 0.90 to 0.99, and a new
    submission then to 0.50."""
    good = scored(app_client, alice, db, 0.80, 0.90, "good")
    worse = scored(app_client, alice, db, 0.85, 0.99, "worse")
    scored(app_client, bob, db, 0.90, 0.95, "b")
    late = submit(app_client, alice, name="late").json()  # uploaded before the close, scored after publication
    app_client.post("/api/v1/admin/leaderboard/freeze", headers=organiser.headers, json={"frozen": True})
    published = app_client.post("/api/v1/admin/leaderboard/publish", headers=organiser.headers).json()
    at = dt.datetime.fromisoformat(published["published_at"]).astimezone(dt.timezone.utc).isoformat()
    final = [("alice", "good", 0.90), ("bob", "b", 0.95)]
    assert private_rows(app_client) == final

    assert error(app_client.post(f"/api/v1/submissions/{worse}/select", headers=alice.headers)) == (
        409,
        f"the private leaderboard of phase 'main' was published at {at}; submission {worse} cannot be selected",
    )
    assert error(submit(app_client, alice, name="after")) == (
        409,
        f"the private leaderboard of phase 'main' was published at {at}; uploads are closed",
    )
    # Nothing done after publication moves the board: an organiser's rerun, a submission uploaded before the close
    # and scored after it, a selection written to the database directly.
    rerun = app_client.post(f"/api/v1/admin/submissions/{good}/rerun", headers=organiser.headers).json()
    run_evaluation(db, rerun["id"], public=0.80, private=0.99)
    run_evaluation(db, late["evaluations"][0]["id"], public=0.10, private=0.50)
    db.get(Submission, late["id"]).selected = True  # type: ignore[union-attr]  # behind the API's back
    db.commit()
    assert private_rows(app_client) == final
    assert private_rows(app_client, organiser.headers) == final


def test_deadline_closes_uploads_and_selection(
    daily: Settings, enqueued: Captured, alice: Account, organiser: Account, db: Session
) -> None:
    deadline = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)
    with TestClient(create_app(daily.model_copy(update={"submission_deadline": deadline}), enqueuer=enqueued)) as c:
        chosen = scored(c, alice, db, 0.80, 0.90, "chosen")
        other = scored(c, alice, db, 0.85, 0.95, "other")
        assert c.post(f"/api/v1/submissions/{chosen}/select", headers=alice.headers).status_code == 200
    passed = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=1)
    closed = daily.model_copy(update={"submission_deadline": passed})
    with TestClient(create_app(closed, enqueuer=enqueued)) as c:
        reason = f"the submission deadline {passed.isoformat()} has passed"
        assert error(submit(c, alice)) == (409, f"{reason}; uploads are closed")
        assert error(c.post(f"/api/v1/submissions/{other}/select", headers=alice.headers)) == (
            409,
            f"{reason}; submission {other} cannot be selected",
        )
        assert error(c.post(f"/api/v1/submissions/{chosen}/unselect", headers=alice.headers)) == (
            409,
            f"{reason}; submission {chosen} cannot be unselected",
        )
        # Not even an organiser changes a participant's choice once it is closed.
        assert c.post(f"/api/v1/submissions/{other}/select", headers=organiser.headers).status_code == 409
        # Organisers' own uploads never rank; they may still check the service after the deadline.
        assert submit(c, organiser).status_code == 201
        mine = c.get("/api/v1/submissions", headers=alice.headers).json()["data"]
        assert [(s["name"], s["selected"]) for s in mine] == [("other", False), ("chosen", True)]
