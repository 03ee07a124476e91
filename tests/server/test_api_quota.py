"""Quota fairness (issue 32, item 6): an organiser's cancel gives the submission back; organisers grant a
participant or a team extra submissions in a phase on a day."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from sqlalchemy.orm import Session

from .conftest import Account, run_evaluation, submit

GRANTS = "/api/v1/admin/quota/grants"


def fill_quota(client: Any, account: Account, db: Session) -> list[int]:
    """Three submissions (the quota of the tests' settings), each run to its end so none is in flight."""
    ids = []
    for i in range(3):
        body = submit(client, account, name=f"s{i}").json()
        run_evaluation(db, body["evaluations"][0]["id"])
        ids.append(body["id"])
    assert submit(client, account).status_code == 429
    return ids


def test_an_organisers_cancel_gives_the_submission_back(
    client: Any, alice: Account, organiser: Account, db: Session
) -> None:
    first = submit(client, alice, name="s0").json()
    second = submit(client, alice, name="s1").json()  # both queued: the in-flight limit of 2 is reached
    run_evaluation(db, first["evaluations"][0]["id"])
    third = submit(client, alice, name="s2").json()
    run_evaluation(db, third["evaluations"][0]["id"])
    assert submit(client, alice).json()["error"]["code"] == "quota_exceeded"

    cancelled = client.post(f"/api/v1/admin/submissions/{second['id']}/cancel", headers=organiser.headers)
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    assert client.get("/api/v1/me/allowance", headers=alice.headers).json()["submissions_today"] == 2
    assert submit(client, alice, name="again").status_code == 201
    log = client.get("/api/v1/admin/audit-log", headers=organiser.headers).json()["data"]
    cancel = next(e for e in log if e["action"] == "cancel")
    assert cancel["detail"] == {"evaluations": [second["evaluations"][0]["id"]], "refunded": True}


def test_cancelling_a_rerun_gives_nothing_back(client: Any, alice: Account, organiser: Account, db: Session) -> None:
    ids = fill_quota(client, alice, db)
    assert client.post(f"/api/v1/admin/submissions/{ids[0]}/rerun", headers=organiser.headers).status_code == 202
    cancelled = client.post(f"/api/v1/admin/submissions/{ids[0]}/cancel", headers=organiser.headers)
    assert cancelled.status_code == 200
    assert submit(client, alice).status_code == 429  # the participant's own evaluation ran: it counts


def test_a_grant_adds_to_todays_quota_in_its_phase(
    client: Any, alice: Account, organiser: Account, db: Session
) -> None:
    fill_quota(client, alice, db)
    tomorrow = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)).date().isoformat()
    later = client.post(
        GRANTS, headers=organiser.headers, json={"phase": "main", "user": "alice", "extra": 5, "day": tomorrow}
    )
    assert later.status_code == 201 and submit(client, alice).status_code == 429  # another day's grant

    response = client.post(
        GRANTS, headers=organiser.headers, json={"phase": "main", "user": "alice", "extra": 1, "reason": "outage"}
    )
    assert response.status_code == 201
    grant = response.json()
    assert (grant["to"], grant["kind"], grant["extra"], grant["phase"]) == ("alice", "user", 1, "main")
    assert client.get("/api/v1/me/allowance", headers=alice.headers).json()["daily_quota"] == 4
    body = submit(client, alice).json()
    run_evaluation(db, body["evaluations"][0]["id"])
    assert submit(client, alice).status_code == 429
    listed = client.get(f"{GRANTS}?phase=main", headers=organiser.headers).json()
    assert listed["count"] == 2 and [g["day"] for g in listed["data"]][1] == tomorrow
    entry = client.get("/api/v1/admin/audit-log", headers=organiser.headers).json()["data"][0]
    assert (entry["action"], entry["target"]) == ("grant_quota", f"user:{alice.user.id}")
    assert entry["detail"]["reason"] == "outage" and entry["detail"]["extra"] == 1


def test_a_teams_grant_and_a_members_grant_count_for_the_team(
    client: Any, alice: Account, bob: Account, organiser: Account, db: Session
) -> None:
    client.post("/api/v1/teams", headers=alice.headers, json={"name": "ants"})
    client.post("/api/v1/admin/teams/ants/members", headers=organiser.headers, json={"user": "bob"})
    fill_quota(client, alice, db)
    assert submit(client, bob).status_code == 429  # one quota for the team
    client.post(GRANTS, headers=organiser.headers, json={"phase": "main", "team": "ants", "extra": 1})
    client.post(GRANTS, headers=organiser.headers, json={"phase": "main", "user": "bob", "extra": 1})
    assert client.get("/api/v1/me/allowance", headers=alice.headers).json()["daily_quota"] == 5
    for account in (bob, alice):
        body = submit(client, account)
        assert body.status_code == 201
        run_evaluation(db, body.json()["evaluations"][0]["id"])
    assert submit(client, alice).status_code == 429


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"phase": "main", "extra": 1}, 422, "Value error, a grant needs a user or a team to go to; neither was given"),
        ({"phase": "main", "user": "alice", "team": "ants", "extra": 1}, 422,
         "Value error, a grant goes to a user or a team, not both (got user 'alice' and team 'ants')"),
        ({"phase": "main", "user": "nobody", "extra": 1}, 404, "user 'nobody' does not exist"),
        ({"phase": "main", "team": "nope", "extra": 1}, 404, "team 'nope' does not exist"),
        ({"phase": "nope", "user": "alice", "extra": 1}, 404, "phase 'nope' does not exist"),
        ({"phase": "main", "user": "olga", "extra": 1}, 409,
         "olga is an organiser: organisers have no quota to grant to"),
        ({"phase": "main", "user": "alice", "extra": 0}, 422,
         "extra: Input should be greater than or equal to 1 (got 0)"),
    ],
    ids=["nobody", "both", "unknown-user", "unknown-team", "unknown-phase", "organiser", "zero"],
)  # fmt: skip
def test_a_bad_grant_is_named_and_changes_nothing(
    client: Any, alice: Account, organiser: Account, body: dict[str, Any], status: int, message: str
) -> None:
    response = client.post(GRANTS, headers=organiser.headers, json=body)
    assert response.status_code == status
    assert response.json()["error"]["message"].endswith(message)
    assert client.get(GRANTS, headers=organiser.headers).json()["count"] == 0
