"""The roster (issue 32, item 1): a class enrolled in one transaction, the users' list, disabling and enabling a user,
and one-time sign-in links; on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from layersched.server.models import AuditLogEntry, Team, User

from .conftest import Account, run_evaluation, submit

IMPORT = "/api/v1/admin/users/import"


def line(
    n: int, name: str, email: str | None = None, team: str | None = None, role: str = "participant"
) -> dict[str, Any]:
    return {"line": n, "name": name, "email": email or f"{name.lower()}@uni.example", "team": team, "role": role}


def counts(db: Session) -> tuple[int, int, int]:
    db.expire_all()
    return (
        db.scalar(select(func.count(User.id))) or 0,
        db.scalar(select(func.count(Team.id))) or 0,
        db.scalar(select(func.count(AuditLogEntry.id))) or 0,
    )


ROSTER = [
    line(2, "Ada", team="owls"),
    line(3, "Ben", team="owls"),
    line(4, "Cyd"),
    line(5, "Tess", role="organiser"),
]


def test_a_roster_is_enrolled_once_and_a_second_run_changes_nothing(
    client: Any, organiser: Account, db: Session
) -> None:
    response = client.post(IMPORT, headers=organiser.headers, json={"rows": ROSTER})
    assert response.status_code == 201, response.text
    body = response.json()
    assert [(c["name"], c["team"], c["role"]) for c in body["created"]] == [
        ("Ada", "owls", "participant"),
        ("Ben", "owls", "participant"),
        ("Cyd", None, "participant"),
        ("Tess", None, "organiser"),
    ]
    assert body["teams_created"] == ["owls"] and body["existing"] == [] and body["assigned"] == []
    tokens = {c["name"]: c["token"] for c in body["created"]}
    assert all(t.startswith("lst_") for t in tokens.values()) and all(c["link"] is None for c in body["created"])
    me = client.get("/api/v1/me", headers={"Authorization": f"Bearer {tokens['Ben']}"}).json()
    assert (me["name"], me["team"]) == ("Ben", "owls")

    before = counts(db)
    again = client.post(IMPORT, headers=organiser.headers, json={"rows": ROSTER})
    assert again.status_code == 201
    assert again.json() == {
        "created": [],
        "existing": ["Ada", "Ben", "Cyd", "Tess"],
        "teams_created": [],
        "assigned": [],
    }
    assert counts(db) == before  # not even an audit entry

    log = client.get("/api/v1/admin/audit-log?limit=200", headers=organiser.headers).json()["data"]
    entry = next(e for e in log if e["action"] == "import_roster")
    assert entry["actor"] == "olga" and entry["detail"]["created"] == ["Ada", "Ben", "Cyd", "Tess"]


def test_users_already_there_are_reported_and_put_into_their_team(
    client: Any, organiser: Account, alice: Account, db: Session
) -> None:
    rows = [line(2, "alice", "alice@example.org", team="cats"), line(3, "Dan", team="cats")]
    body = client.post(IMPORT, headers=organiser.headers, json={"rows": rows}).json()
    assert body["existing"] == ["alice"] and [c["name"] for c in body["created"]] == ["Dan"]
    assert body["assigned"] == [{"user": "alice", "team": "cats"}] and body["teams_created"] == ["cats"]
    assert client.get("/api/v1/teams/mine", headers=alice.headers).json()["members"] == ["alice", "Dan"]


BAD = [
    ([line(2, "Ada"), line(3, "ada", "other@x.org")], "line 3, field name: 'ada' is on line 2 too"),
    ([line(2, "Ada"), line(3, "Bo", "ADA@uni.example")], "line 3, field email: 'ADA@uni.example' is on line 2 too"),
    (
        [line(2, "Ada"), line(7, "x" * 101)],
        f"line 7, field name: {'x' * 40 + '...'!r} has 101 characters, the most is 100",
    ),
    ([line(2, "Ada <b>")], "line 2, field name: 'Ada <b>' is not a name: use letters, digits and _ . @ + - with "
     "single spaces between words"),
    ([line(4, "Ada", "not-an-address")], "line 4, field email: 'not-an-address' is not an e-mail address"),
    ([line(2, "Ada", role="admin")], "line 2, field role: 'admin' is not one of participant, organiser"),
    ([line(2, "")], "line 2, field name: it is empty"),
    ([line(2, "Tess", role="organiser", team="owls")], "line 2, field team: Tess is an organiser: organisers compete "
     "in no team"),
    ([line(2, "alice", "alice@other.org")], "line 2, field email: user 'alice' exists with e-mail "
     "'alice@example.org', not 'alice@other.org'"),
    ([line(2, "Al", "alice@example.org")], "line 2, field email: 'alice@example.org' is the e-mail of user 'alice'"),
    ([line(2, "Alice", "alice@example.org")], "line 2, field name: 'Alice' is user 'alice''s name (names are "
     "compared ignoring case)"),
    ([line(2, "alice", "alice@example.org", role="organiser")], "line 2, field role: user 'alice' exists as a "
     "participant, not a organiser"),
    ([line(2, "Greedy")], "line 2, field name: 'Greedy' is the name of a baseline: the leaderboard could not tell the "
     "two apart"),
    (
        [line(n, f"A{n}", team="owls") for n in (2, 3, 4, 5)],
        "line 5, field team: team 'owls' would have 4 members (0 before this roster, then lines 2, 3, 4, 5), the most "
        "a team may have is 3",
    ),
    ([line(2, "Ada", team="alice")], "line 2, field team: 'alice' is the name of a participant: the leaderboard could "
     "not tell the two apart"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rows", "message"),
    BAD,
    ids=[
        "repeated-name",
        "repeated-email",
        "name-too-long",
        "name-with-markup",
        "bad-email",
        "bad-role",
        "empty-name",
        "organiser-in-team",
        "existing-name-other-email",
        "email-of-another-user",
        "name-in-another-case",
        "existing-user-other-role",
        "baseline-name",
        "team-over-size",
        "team-named-as-user",
    ],
)
def test_a_bad_line_is_named_and_nothing_is_imported(
    client: Any, organiser: Account, alice: Account, db: Session, rows: list[dict[str, Any]], message: str
) -> None:
    good = [line(1, "Zed", team="larks")]  # a good first line, whose user and team must not be left behind
    before = counts(db)
    response = client.post(IMPORT, headers=organiser.headers, json={"rows": good + rows})
    assert response.status_code == 422
    assert response.json()["error"] == {"code": "invalid_roster", "message": f"{message}; nothing was imported"}
    assert counts(db) == before


def test_a_user_in_another_team_is_a_bad_line(client: Any, organiser: Account, alice: Account, db: Session) -> None:
    client.post("/api/v1/teams", headers=alice.headers, json={"name": "cats"})
    before = counts(db)
    response = client.post(
        IMPORT, headers=organiser.headers, json={"rows": [line(9, "alice", "alice@example.org", "owls")]}
    )
    assert response.status_code == 422
    assert response.json()["error"]["message"] == (
        "line 9, field team: alice is in team 'cats': remove them from it first; nothing was imported"
    )
    assert counts(db) == before


def test_sign_in_links_are_used_once_and_show_a_token(client: Any, organiser: Account, db: Session) -> None:
    body = client.post(IMPORT, headers=organiser.headers, json={"rows": [line(2, "Ada")], "links": True}).json()
    (ada,) = body["created"]
    assert ada["token"] is None and ada["link"].startswith("http://testserver/signin/link/lsl_")
    path = ada["link"].removeprefix("http://testserver")

    page = client.get(path)
    assert page.status_code == 200 and "Sign in as Ada" in page.text and 'id="use-link"' in page.text
    used = client.post(path)
    assert used.status_code == 200 and "Signed in as Ada" in used.text
    token = used.text.split('id="token" value="')[1].split('"')[0]
    assert client.get("/api/v1/me", headers={"Authorization": f"Bearer {token}"}).json()["name"] == "Ada"
    assert "Signed in as <strong>Ada</strong>" in client.get("/submissions").text  # the browser is signed in

    again = client.post(path)
    assert again.status_code == 409 and "this sign-in link was used already" in again.text
    unknown = client.get("/signin/link/lsl_nothing")
    assert unknown.status_code == 404 and "not one the server made" in unknown.text

    fresh = client.post("/api/v1/admin/users/Ada/links", headers=organiser.headers)
    assert fresh.status_code == 201 and fresh.json()["link"].startswith("http://testserver/signin/link/lsl_")


def test_a_sign_in_link_from_another_site_is_refused(client: Any, organiser: Account) -> None:
    body = client.post(IMPORT, headers=organiser.headers, json={"rows": [line(2, "Ada")], "links": True}).json()
    path = body["created"][0]["link"].removeprefix("http://testserver")
    refused = client.post(path, headers={"Origin": "https://evil.example"})
    assert refused.status_code == 403
    assert client.post(path).status_code == 200  # not used up by the refused post


def test_the_users_list(client: Any, organiser: Account, alice: Account, bob: Account, db: Session) -> None:
    client.post("/api/v1/teams", headers=alice.headers, json={"name": "cats"})
    submit(client, bob)
    body = client.get("/api/v1/admin/users", headers=organiser.headers).json()
    assert body["count"] == 3
    by_name = {u["name"]: u for u in body["data"]}
    assert by_name["alice"]["team"] == "cats" and by_name["bob"]["team"] is None
    assert by_name["bob"]["last_submission_at"] is not None and by_name["alice"]["last_submission_at"] is None
    assert by_name["olga"]["role"] == "organiser" and by_name["alice"]["tokens_active"] == 1
    assert {
        u["name"] for u in client.get("/api/v1/admin/users?team=cats", headers=organiser.headers).json()["data"]
    } == {"alice"}
    participants = client.get("/api/v1/admin/users?role=participant", headers=organiser.headers).json()
    assert [u["name"] for u in participants["data"]] == ["alice", "bob"]
    unknown = client.get("/api/v1/admin/users?team=nope", headers=organiser.headers)
    assert unknown.status_code == 404 and unknown.json()["error"]["message"] == "team 'nope' does not exist"


def test_disable_and_enable(client: Any, organiser: Account, alice: Account, bob: Account, db: Session) -> None:
    for account, value in ((alice, 0.8), (bob, 0.9)):
        body = submit(client, account).json()
        run_evaluation(db, body["evaluations"][0]["id"], public=value)
    board = lambda: [r["participant"] for r in client.get("/api/v1/leaderboard").json()["rows"] if not r["baseline"]]  # noqa: E731
    assert board() == ["alice", "bob"]

    response = client.post(
        "/api/v1/admin/users/alice/disable", headers=organiser.headers, json={"reason": "shared a token"}
    )
    assert response.status_code == 200
    assert response.json()["tokens_revoked"] == 1 and response.json()["user"]["disabled_at"] is not None
    assert client.get("/api/v1/me", headers=alice.headers).status_code == 401
    assert submit(client, alice).status_code == 401
    assert board() == ["bob"]
    again = client.post("/api/v1/admin/users/alice/disable", headers=organiser.headers, json={})
    assert again.status_code == 409 and again.json()["error"]["message"].startswith("user 'alice' is disabled already")
    token = client.post(f"/api/v1/admin/users/{alice.user.id}/tokens", headers=organiser.headers)
    assert token.status_code == 409
    assert (
        token.json()["error"]["message"] == "user 'alice' is disabled: enable them first (layersched admin user enable)"
    )
    own = client.post("/api/v1/admin/users/olga/disable", headers=organiser.headers, json={})
    assert own.status_code == 403

    enabled = client.post("/api/v1/admin/users/alice/enable", headers=organiser.headers)
    assert enabled.status_code == 200 and enabled.json()["disabled_at"] is None
    assert board() == ["alice", "bob"]
    assert client.get("/api/v1/me", headers=alice.headers).status_code == 401  # the revoked token stays revoked
    assert client.post("/api/v1/admin/users/alice/enable", headers=organiser.headers).status_code == 409
    actions = [e["action"] for e in client.get("/api/v1/admin/audit-log", headers=organiser.headers).json()["data"]]
    assert actions[:2] == ["enable_user", "disable_user"]
    missing = client.post("/api/v1/admin/users/nobody/disable", headers=organiser.headers, json={})
    assert missing.status_code == 404 and missing.json()["error"]["message"] == "user 'nobody' does not exist"
