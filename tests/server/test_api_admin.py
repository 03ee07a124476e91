"""Organisers' routes: 403 for participants, the actions themselves, and the audit log that records them."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.orm import Session

from layersched.server import storage

from .conftest import Account, Captured, run_evaluation, submit

ADMIN_ROUTES = [
    ("post", "/api/v1/admin/users", {"name": "x", "email": "x@example.org", "role": "participant"}),
    ("post", "/api/v1/admin/users/1/tokens", None),
    ("delete", "/api/v1/admin/tokens/1", None),
    ("post", "/api/v1/admin/submissions/1/rerun", {}),
    ("post", "/api/v1/admin/submissions/1/audit", {}),
    ("post", "/api/v1/admin/submissions/1/cancel", None),
    ("post", "/api/v1/admin/submissions/1/disqualify", {"reason": "x"}),
    ("post", "/api/v1/admin/leaderboard/freeze", {"frozen": True}),
    ("post", "/api/v1/admin/leaderboard/publish", None),
    ("post", "/api/v1/admin/evalsets/sample/reveal", None),
    ("get", "/api/v1/admin/audit-log", None),
    ("get", "/api/v1/admin/evaluations/1", None),
    # Running a term (issue 32)
    ("post", "/api/v1/admin/users/import", {"rows": []}),
    ("get", "/api/v1/admin/users", None),
    ("post", "/api/v1/admin/users/bob/disable", {}),
    ("post", "/api/v1/admin/users/bob/enable", None),
    ("post", "/api/v1/admin/users/bob/links", None),
    ("get", "/api/v1/admin/submissions", None),
    ("get", "/api/v1/admin/exports/board?phase=main", None),
    ("get", "/api/v1/admin/exports/submissions?phase=main", None),
    ("get", "/api/v1/admin/exports/episodes?phase=main", None),
    ("get", "/api/v1/admin/exports/bundles?phase=main", None),
    ("post", "/api/v1/admin/quota/grants", {"phase": "main", "user": "alice", "extra": 1}),
    ("get", "/api/v1/admin/quota/grants", None),
    ("post", "/api/v1/admin/bulk/rerun", {"ids": [1], "dry_run": True}),
    ("post", "/api/v1/admin/bulk/disqualify", {"ids": [1], "reason": "x", "dry_run": True}),
    ("get", "/api/v1/admin/analytics", None),
    ("post", "/api/v1/admin/webhooks", {"url": "https://x.org/hook"}),
    ("get", "/api/v1/admin/webhooks", None),
    ("delete", "/api/v1/admin/webhooks/1", None),
    ("post", "/api/v1/admin/webhooks/1/test", None),
]
ROUTE_IDS = [f"{m}:{p.removeprefix('/api/v1/admin/')}" for m, p, _ in ADMIN_ROUTES]


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_ROUTES, ids=ROUTE_IDS)
def test_participant_gets_403(client: Any, alice: Account, method: str, path: str, body: Any) -> None:
    response = client.request(method, path, headers=alice.headers, json=body)
    assert response.status_code == 403
    assert response.json()["error"] == {
        "code": "forbidden",
        "message": "user 'alice' is a participant; this route is for organisers",
    }


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_ROUTES, ids=ROUTE_IDS)
def test_anonymous_gets_401(client: Any, evalset: Any, method: str, path: str, body: Any) -> None:
    response = client.request(method, path, json=body)
    assert response.status_code == 401 and response.json()["error"]["code"] == "unauthorized"


@pytest.mark.parametrize(
    ("method", "path", "body", "message"),
    [
        ("post", "/api/v1/admin/users/999/tokens", None, "user 999 does not exist"),
        ("delete", "/api/v1/admin/tokens/999", None, "token 999 does not exist"),
        ("post", "/api/v1/admin/submissions/999/rerun", {}, "submission 999 does not exist"),
        ("post", "/api/v1/admin/submissions/999/audit", {}, "submission 999 does not exist"),
        ("post", "/api/v1/admin/submissions/999/cancel", None, "submission 999 does not exist"),
        ("post", "/api/v1/admin/submissions/999/disqualify", {"reason": "x"}, "submission 999 does not exist"),
        ("post", "/api/v1/admin/evalsets/nope/reveal", None, "evaluation set 'nope' does not exist"),
        ("get", "/api/v1/admin/evaluations/999", None, "evaluation 999 does not exist"),
    ],
    ids=["token-user", "revoke", "rerun", "audit", "cancel", "disqualify", "reveal", "evaluation"],
)
def test_404(client: Any, organiser: Account, method: str, path: str, body: Any, message: str) -> None:
    response = client.request(method, path, headers=organiser.headers, json=body)
    assert response.status_code == 404
    assert response.json()["error"] == {"code": "not_found", "message": message}


def test_users_and_tokens(client: Any, organiser: Account) -> None:
    response = client.post(
        "/api/v1/admin/users",
        headers=organiser.headers,
        json={"name": "dave", "email": "dave@example.org", "role": "participant"},
    )
    assert response.status_code == 201
    created = response.json()
    assert created["user"]["name"] == "dave" and created["user"]["role"] == "participant"
    dave = {"Authorization": f"Bearer {created['token']}"}
    assert client.get("/api/v1/me", headers=dave).json()["name"] == "dave"

    second = client.post(f"/api/v1/admin/users/{created['user']['id']}/tokens", headers=organiser.headers)
    assert second.status_code == 201
    token = second.json()
    assert client.get("/api/v1/me", headers={"Authorization": f"Bearer {token['token']}"}).status_code == 200
    assert client.delete(f"/api/v1/admin/tokens/{token['id']}", headers=organiser.headers).status_code == 204
    assert client.get("/api/v1/me", headers={"Authorization": f"Bearer {token['token']}"}).status_code == 401
    assert client.get("/api/v1/me", headers=dave).status_code == 200  # the other token still works

    duplicate = client.post(
        "/api/v1/admin/users",
        headers=organiser.headers,
        json={"name": "dave", "email": "other@example.org", "role": "participant"},
    )
    assert duplicate.status_code == 409
    assert duplicate.json()["error"] == {"code": "conflict", "message": "a user with name 'dave' already exists"}


@pytest.mark.parametrize(
    "body",
    [
        {"name": "", "email": "e@x.org"},
        {"name": "e", "email": "not-an-email"},
        {"name": "e", "email": "e@x.org", "role": "admin"},
    ],
    ids=["empty-name", "bad-email", "bad-role"],
)
def test_create_user_422(client: Any, organiser: Account, body: dict[str, str]) -> None:
    response = client.post("/api/v1/admin/users", headers=organiser.headers, json=body)
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"


def test_rerun_audit_cancel(client: Any, alice: Account, organiser: Account, db: Session, enqueued: Captured) -> None:
    body = submit(client, alice).json()
    submission_id, initial = body["id"], body["evaluations"][0]["id"]

    early = client.post(f"/api/v1/admin/submissions/{submission_id}/audit", headers=organiser.headers, json={})
    assert early.status_code == 409
    assert early.json()["error"]["message"] == (
        f"submission {submission_id} has no succeeded evaluation on 'sample', the set of its phase 'main', to audit"
    )

    run_evaluation(db, initial)
    rerun = client.post(f"/api/v1/admin/submissions/{submission_id}/rerun", headers=organiser.headers)
    assert rerun.status_code == 202 and rerun.json()["kind"] == "rerun" and rerun.json()["state"] == "queued"
    audit = client.post(
        f"/api/v1/admin/submissions/{submission_id}/audit", headers=organiser.headers, json={"sample": 1}
    )
    assert audit.status_code == 202
    assert audit.json()["kind"] == "audit" and audit.json()["audit_of"] == initial
    assert enqueued.calls[1:] == [
        ("layersched.evaluate", [rerun.json()["id"]], "evaluations"),
        ("layersched.audit", [audit.json()["id"]], "audits"),
    ]
    bad_sample = client.post(
        f"/api/v1/admin/submissions/{submission_id}/audit", headers=organiser.headers, json={"sample": 0}
    )
    assert bad_sample.status_code == 422
    unknown = client.post(
        f"/api/v1/admin/submissions/{submission_id}/rerun", headers=organiser.headers, json={"evalset": "nope"}
    )
    assert unknown.status_code == 404

    cancelled = client.post(f"/api/v1/admin/submissions/{submission_id}/cancel", headers=organiser.headers)
    assert cancelled.status_code == 200
    states = {e["kind"]: e["state"] for e in cancelled.json()["evaluations"]}
    assert states == {"initial": "succeeded", "rerun": "cancelled", "audit": "cancelled"}
    assert cancelled.json()["state"] == "cancelled"
    assert cancelled.json()["error"] == {"category": "cancelled", "message": "cancelled by olga"}
    again = client.post(f"/api/v1/admin/submissions/{submission_id}/cancel", headers=organiser.headers)
    assert again.status_code == 409

    detail = client.get(f"/api/v1/admin/evaluations/{initial}", headers=organiser.headers).json()
    assert detail["score_private"]["overall"] == 0.95 and len(detail["episodes"]) == 2
    assert detail["episodes"][0]["trace_hash"] == "f" * 64


def test_audit_verdict_shown(client: Any, alice: Account, organiser: Account, db: Session) -> None:
    from layersched.server import storage

    body = submit(client, alice).json()
    run_evaluation(db, body["evaluations"][0]["id"])
    audit = client.post(f"/api/v1/admin/submissions/{body['id']}/audit", headers=organiser.headers).json()
    storage.start_evaluation(
        session=db,
        evaluation_id=audit["id"],
        worker_id="w",
        total=1,
        sim_version="1.0.0",
        image_digest=None,
        sandbox="process",
    )
    storage.finish_evaluation(
        session=db,
        evaluation_id=audit["id"],
        state="succeeded",
        audit={
            "verdict": "mismatch",
            "mismatches": ["lab-5/e0: trace hash differs", "hub-20/e1: mean_completion 11.0 -> 12.0"],
            "public_mismatches": ["lab-5/e0: trace hash differs", "hub-20/e1: differs (hidden episode)"],
        },
    )
    shown = client.get(f"/api/v1/submissions/{body['id']}", headers=alice.headers).json()
    assert shown["state"] == "succeeded"  # an audit does not change the submission's own state
    # The owner reads the participant's lines: of a hidden episode, that it differs, not its metrics.
    assert shown["evaluations"][-1]["audit"] == {
        "verdict": "mismatch",
        "mismatches": ["lab-5/e0: trace hash differs", "hub-20/e1: differs (hidden episode)"],
    }
    organisers = client.get(f"/api/v1/admin/evaluations/{audit['id']}", headers=organiser.headers).json()
    assert organisers["audit"]["mismatches"][1] == "hub-20/e1: mean_completion 11.0 -> 12.0"


def test_disqualify_422(client: Any, alice: Account, organiser: Account) -> None:
    submission_id = submit(client, alice).json()["id"]
    response = client.post(
        f"/api/v1/admin/submissions/{submission_id}/disqualify", headers=organiser.headers, json={"reason": ""}
    )
    assert response.status_code == 422


def test_reveal_and_audit_log(client: Any, alice: Account, organiser: Account, db: Session) -> None:
    submission_id = submit(client, alice).json()["id"]
    client.post(
        f"/api/v1/admin/submissions/{submission_id}/disqualify", headers=organiser.headers, json={"reason": "copied"}
    )
    # Issue 29: not while a phase on the set still takes uploads (its hidden episodes would be known).
    refused = client.post("/api/v1/admin/evalsets/sample/reveal", headers=organiser.headers)
    assert refused.status_code == 409
    assert refused.json()["error"]["message"] == (
        "evaluation set 'sample' is the set of phase main, open and not published: revealing it now would show its "
        "hidden episodes while it takes uploads; close the phase or publish its board first (or --force)"
    )
    assert client.get("/api/v1/evalsets/current").json()["revealed"] is False
    client.post("/api/v1/admin/leaderboard/freeze", headers=organiser.headers, json={"frozen": True})
    client.post("/api/v1/admin/leaderboard/publish", headers=organiser.headers)
    revealed = client.post("/api/v1/admin/evalsets/sample/reveal", headers=organiser.headers)
    assert revealed.status_code == 200 and revealed.json()["revealed"] is True
    assert client.get("/api/v1/evalsets/current").json()["revealed"] is True

    log = client.get("/api/v1/admin/audit-log?limit=4", headers=organiser.headers).json()
    assert log["count"] >= 4
    assert [(e["actor"], e["action"], e["target"]) for e in log["data"]] == [
        ("olga", "reveal_evalset", "evalset:sample"),
        ("olga", "publish_private", "leaderboard:main"),
        ("olga", "freeze", "leaderboard:main"),
        ("olga", "disqualify", f"submission:{submission_id}"),
    ]
    assert log["data"][3]["detail"] == {"reason": "copied"}
    assert log["data"][0]["at"]
    # A revealed set takes no new phase.
    created = client.post("/api/v1/admin/phases", headers=organiser.headers, json={"name": "x", "evalset": "sample"})
    assert created.status_code == 409
    assert created.json()["error"]["message"].startswith("evaluation set 'sample' is revealed: its hidden episodes")


def test_reveal_with_force_while_a_phase_is_open_is_in_the_audit_log(
    client: Any, organiser: Account, db: Session
) -> None:
    storage.register_evalset(session=db, name="spring", commitment="s" * 64, path="s.toml", scenarios=[], current=False)
    assert (
        client.post(
            "/api/v1/admin/phases", headers=organiser.headers, json={"name": "final", "evalset": "spring"}
        ).status_code
        == 201
    )
    forced = client.post("/api/v1/admin/evalsets/spring/reveal", headers=organiser.headers, json={"force": True})
    assert forced.status_code == 200 and forced.json()["revealed"] is True
    entry = client.get("/api/v1/admin/audit-log?limit=1", headers=organiser.headers).json()["data"][0]
    assert (entry["action"], entry["detail"]) == (
        "reveal_evalset",
        {"commitment": "s" * 64, "forced_while_open": ["final"]},
    )
    bad = client.post("/api/v1/admin/evalsets/spring/reveal", headers=organiser.headers, json={"force": "yes"})
    assert bad.status_code == 422
