"""``GET /me/allowance`` on real PostgreSQL and SQLite: the upload's own refusals, told before any upload."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from sqlalchemy.orm import Session

from layersched.server.app import create_app
from layersched.server.config import Settings

from .conftest import Account, Captured, TestClient, run_evaluation, submit


def allowance(client: Any, account: Account) -> dict[str, Any]:
    response = client.get("/api/v1/me/allowance", headers=account.headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_an_open_allowance_has_no_refusal(client: Any, alice: Account) -> None:
    assert allowance(client, alice) == {
        "phase": "main",
        "track": "layers-v1",
        "submissions_today": 0,
        "daily_quota": 3,
        "in_flight": 0,
        "max_in_flight": 2,
        "refusal": None,
    }


def test_the_refusal_is_the_uploads_own_error_word_for_word(client: Any, alice: Account, db: Session) -> None:
    for _ in range(2):
        assert submit(client, alice).status_code == 201
    body = allowance(client, alice)
    assert (body["in_flight"], body["submissions_today"]) == (2, 2)
    refused = submit(client, alice)
    assert body["refusal"] == {"status": refused.status_code, **refused.json()["error"]}
    assert body["refusal"]["code"] == "too_many_in_flight"

    for evaluation_id in (1, 2):
        run_evaluation(db, evaluation_id)
    assert submit(client, alice).status_code == 201
    body = allowance(client, alice)
    refused = submit(client, alice)
    assert body["refusal"] == {"status": 429, **refused.json()["error"]}
    assert (
        body["refusal"]["message"]
        == "daily quota of 3 submissions to phase 'main' used (3 today); it resets at 00:00 UTC"
    )


def test_organisers_are_never_refused(client: Any, organiser: Account) -> None:
    for _ in range(3):
        assert submit(client, organiser).status_code == 201
    assert allowance(client, organiser)["refusal"] is None


def test_no_evaluation_set_is_a_refusal(client: Any, make_account: Any) -> None:
    carol = make_account("carol")  # no evalset fixture: nothing is registered
    assert allowance(client, carol)["refusal"] == {
        "status": 409,
        "code": "conflict",
        "message": (
            "no phase exists yet; submissions open once an organiser registers an evaluation set or creates a phase"
        ),
    }


def test_after_the_deadline_the_refusal_says_uploads_are_closed(
    settings: Settings, enqueued: Captured, alice: Account
) -> None:
    past = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
    with TestClient(create_app(settings.model_copy(update={"submission_deadline": past}), enqueuer=enqueued)) as c:
        assert allowance(c, alice)["refusal"] == {
            "status": 409,
            "code": "conflict",
            "message": "the submission deadline 2020-01-01T00:00:00+00:00 has passed; uploads are closed",
        }


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer lst_0000_nope"}], ids=["no-token", "unknown-token"])
def test_a_missing_or_wrong_token_is_401(client: Any, alice: Account, headers: dict[str, str]) -> None:
    response = client.get("/api/v1/me/allowance", headers=headers)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"
