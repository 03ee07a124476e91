"""Moderation at scale (issue 32, item 8): rerun and disqualify several submissions by id or by filter, with a dry
run that lists them and touches nothing."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from layersched.server.errors import Conflict
from layersched.server.models import AuditLogEntry, Evaluation
from layersched.server.storage.moderation import bulk_targets
from layersched.server.storage.submission_views import SubmissionFilter

from .conftest import Account, Captured
from .term import Term, make_term

RERUN, DISQUALIFY = "/api/v1/admin/bulk/rerun", "/api/v1/admin/bulk/disqualify"
SERVICE_FAILED = {"state": "failed", "category": "infrastructure_error"}


@pytest.fixture
def term(db: Session, organiser: Account) -> Term:
    return make_term(db, organiser.user)


def written(db: Session) -> tuple[int, int]:
    db.expire_all()
    return db.scalar(select(func.count(Evaluation.id))) or 0, db.scalar(select(func.count(AuditLogEntry.id))) or 0


def test_a_dry_run_lists_and_touches_nothing_then_the_rerun_of_what_the_service_failed(
    client: Any, organiser: Account, term: Term, db: Session, enqueued: Captured
) -> None:
    before = written(db)
    dry = client.post(RERUN, headers=organiser.headers, json={"filter": SERVICE_FAILED, "dry_run": True})
    assert dry.status_code == 200, dry.text
    body = dry.json()
    assert (body["dry_run"], body["count"], body["evaluations"]) == (True, 2, [])
    assert [(s["id"], s["category"], s["service_failure"]) for s in body["submissions"]] == [
        (term.ids["cyd-lost"], "infrastructure", True),
        (term.ids["ada-bundle"], "invalid_bundle", True),
    ]
    assert written(db) == before and enqueued.calls == []

    done = client.post(RERUN, headers=organiser.headers, json={"filter": SERVICE_FAILED}).json()
    assert done["dry_run"] is False and len(done["evaluations"]) == 2 and done["skipped"] == []
    assert [call[1] for call in enqueued.calls] == [[e] for e in done["evaluations"]]
    log = client.get("/api/v1/admin/audit-log", headers=organiser.headers).json()["data"][:2]
    assert [(e["action"], e["detail"]["bulk"]) for e in log] == [("rerun", True), ("rerun", True)]

    again = client.post(RERUN, headers=organiser.headers, json={"ids": [term.ids["cyd-lost"], term.ids["ada-scored"]]})
    assert again.status_code == 200
    result = again.json()
    assert len(result["evaluations"]) == 1  # the scored one is rerun
    assert result["skipped"] == [
        {"id": term.ids["cyd-lost"], "why": f"evaluation {done['evaluations'][0]} is queued or running already"}
    ]


def test_disqualify_by_ids_and_by_filter(client: Any, organiser: Account, term: Term, db: Session) -> None:
    ids = [term.ids["ada-scored"], term.ids["ben-scored"]]
    dry = client.post(DISQUALIFY, headers=organiser.headers, json={"ids": ids, "reason": "copied", "dry_run": True})
    assert dry.json()["count"] == 2
    board = client.get("/api/v1/leaderboard?phase=final", headers=organiser.headers).json()
    assert [r["participant"] for r in board["rows"] if not r["baseline"]] == ["owls"]

    done = client.post(DISQUALIFY, headers=organiser.headers, json={"ids": ids, "reason": "copied"})
    assert done.status_code == 200
    board = client.get("/api/v1/leaderboard?phase=final", headers=organiser.headers).json()
    assert [r["participant"] for r in board["rows"] if not r["baseline"]] == []
    by_filter = client.post(DISQUALIFY, headers=organiser.headers, json={"filter": {"owner": "cyd"}, "reason": "x"})
    assert by_filter.json()["count"] == 3
    view = client.get("/api/v1/admin/submissions?owner=cyd", headers=organiser.headers).json()
    assert {row["disqualified"] for row in view["data"]} == {"x"}


@pytest.mark.parametrize(
    ("path", "body", "status", "message"),
    [
        (RERUN, {}, 422, "name submissions by ids or by a filter with at least one criterion (an empty filter would "
         "be every submission)"),
        (RERUN, {"filter": {}}, 422, "name submissions by ids or by a filter with at least one criterion"),
        (RERUN, {"ids": [1], "filter": {"owner": "cyd"}}, 422, "name submissions by ids or by a filter, not both"),
        (RERUN, {"ids": [1, 99999]}, 404, "submission 99999 does not exist"),
        (RERUN, {"filter": {"phase": "nope"}}, 404, "phase 'nope' does not exist"),
        (RERUN, {"filter": {"owner": "cyd"}, "evalset": "nope"}, 404, "evaluation set 'nope' does not exist"),
        (DISQUALIFY, {"ids": [1]}, 422, "reason: Field required"),
        (DISQUALIFY, {"filter": {"team": "nope"}, "reason": "x"}, 404, "team 'nope' does not exist"),
    ],
    ids=["nothing", "empty-filter", "both", "unknown-id", "unknown-phase", "unknown-set", "no-reason", "unknown-team"],
)  # fmt: skip
def test_bad_input_is_named_and_changes_nothing(
    client: Any, organiser: Account, term: Term, db: Session, path: str, body: dict[str, Any], status: int, message: str
) -> None:
    before = written(db)
    response = client.post(path, headers=organiser.headers, json=body)
    assert response.status_code == status
    assert message in response.json()["error"]["message"]
    assert written(db) == before


def test_more_than_an_action_may_touch_is_refused(db: Session, term: Term) -> None:
    with pytest.raises(Conflict, match="the filter matches more than 2 submissions, the most one action may touch"):
        bulk_targets(session=db, ids=None, chosen=SubmissionFilter(phase="final"), most=2)
    assert len(bulk_targets(session=db, ids=None, chosen=SubmissionFilter(owner="cyd"), most=3)) == 3
