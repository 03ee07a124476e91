"""``GET|PUT /admin/challenge`` (issue 29, item 2): the body is checked whole, a revealed set takes no phase, and
the applied rules are what the routes read (on both databases)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.models import EvalSet

from .conftest import Account

PHASE = {"name": "final", "evalset": "spring", "title": "Final", "daily_quota": 2}


def put(client: Any, organiser: Account, body: Any, dry_run: bool = False) -> Any:
    return client.put(f"/api/v1/admin/challenge?dry_run={str(dry_run).lower()}", headers=organiser.headers, json=body)


@pytest.fixture
def spring(db: Session, evalset: EvalSet) -> EvalSet:
    return storage.register_evalset(
        session=db, name="spring", commitment="s" * 64, path="s.toml", scenarios=[], current=False
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"phases": [PHASE], "rounds": []}, "rounds: Extra inputs are not permitted"),
        ({"rules": {"team_size": 3}}, "rules.team_size: Extra inputs are not permitted"),
        ({"phases": [PHASE, PHASE]}, "phase 'final' is named twice; phase names are unique"),
        ({"phases": [{**PHASE, "closes_at": "2099-01-01T00:00:00"}]}, "phases.0.closes_at: Input should have timezone"),
    ],
    ids=["unknown-key", "unknown-rule", "overlapping-names", "no-zone"],
)
def test_a_bad_body_is_422_and_changes_nothing(
    client: Any, organiser: Account, spring: EvalSet, body: Any, message: str
) -> None:
    response = put(client, organiser, body)
    assert response.status_code == 422
    assert message in response.json()["error"]["message"]
    assert [p["name"] for p in client.get("/api/v1/phases").json()["data"]] == ["main"]


def test_a_revealed_set_takes_no_new_phase(client: Any, organiser: Account, spring: EvalSet) -> None:
    forced = client.post("/api/v1/admin/evalsets/spring/reveal", headers=organiser.headers, json={"force": True})
    assert forced.status_code == 200
    response = put(client, organiser, {"phases": [PHASE]}, dry_run=True)
    assert (response.status_code, response.json()["error"]["message"]) == (
        409,
        "phase 'final': evaluation set 'spring' is revealed; no new phase may use it",
    )


def test_the_applied_rules_are_what_routes_read_and_export_gives_them_back(
    client: Any, organiser: Account, alice: Account, spring: EvalSet
) -> None:
    body = {"rules": {"team_max_size": 5, "final_submissions": 3}, "phases": [PHASE]}
    applied = put(client, organiser, body)
    assert applied.status_code == 200 and applied.json()["applied"] is True
    assert client.post("/api/v1/teams", headers=alice.headers, json={"name": "ants"}).json()["max_size"] == 5
    exported = client.get("/api/v1/admin/challenge", headers=organiser.headers).json()
    assert exported["rules"] == {
        "submission_deadline": None,
        "final_submissions": 3,
        "team_max_size": 5,
        "team_invite_hours": None,
        "team_merge_deadline": None,
    }
    assert [(p["name"], p["evalset"], p["daily_quota"]) for p in exported["phases"]] == [
        ("main", "sample", None),
        ("final", "spring", 2),
    ]
    again = put(client, organiser, exported)
    assert again.json() == {"changes": [], "notes": [], "applied": False}
    cleared = put(client, organiser, {**exported, "rules": {}})  # a rule left out is its setting again
    assert cleared.json()["changes"][0] == "rule final_submissions: 3 -> the setting LAYERSCHED_FINAL_SUBMISSIONS"
    assert client.get("/api/v1/teams/mine", headers=alice.headers).json()["max_size"] == 3
