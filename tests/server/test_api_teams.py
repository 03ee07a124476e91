"""Teams through the API (issue 18 item 3 and 4): create, invite by code, join, leave, the organisers' assignments;
one quota, one board row, one final selection and shared logs per team; every refusal clear and changing nothing,
including joins racing for the last seat."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.testclient import TestClient

from layersched.server import storage
from layersched.server.app import create_app
from layersched.server.config import Settings
from layersched.server.models import TeamInvite, TeamMember

from .conftest import Account, Captured, run_evaluation, submit

NOW = dt.datetime.now(dt.timezone.utc)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Teams of at most two, so that "full" is one join away; a code for each of eight racers for the last seat."""
    return settings.model_copy(update={"team_max_size": 2, "team_live_invites": 8})


@pytest.fixture
def carol(make_account: Any, evalset: Any) -> Account:
    return make_account("carol")


def error(response: Any) -> tuple[int, str, str]:
    body = response.json()["error"]
    return response.status_code, body["code"], body["message"]


def create(client: Any, account: Account, name: str) -> Any:
    return client.post("/api/v1/teams", headers=account.headers, json={"name": name})


def invite(client: Any, account: Account) -> str:
    response = client.post("/api/v1/teams/mine/invites", headers=account.headers)
    assert response.status_code == 201, response.text
    code: str = response.json()["code"]
    return code


def join(client: Any, account: Account, code: str) -> Any:
    return client.post("/api/v1/teams/join", headers=account.headers, json={"code": code})


def members(client: Any, account: Account) -> list[str]:
    team = client.get("/api/v1/teams/mine", headers=account.headers).json()
    found: list[str] = team["members"]
    return found


@pytest.fixture
def ants(client: Any, alice: Account, bob: Account) -> str:
    """Team ``ants``: alice, who made it, and bob, who joined with her code."""
    assert create(client, alice, "ants").status_code == 201
    assert join(client, bob, invite(client, alice)).status_code == 200
    return "ants"


# ------------------------------------------------------------------------------------------------ forming a team


def test_create_invite_join_and_leave(client: Any, alice: Account, bob: Account, db: Session) -> None:
    created = create(client, alice, "ants")
    assert created.status_code == 201
    assert {k: created.json()[k] for k in ("name", "members", "max_size")} == {
        "name": "ants",
        "members": ["alice"],
        "max_size": 2,
    }
    response = client.post("/api/v1/teams/mine/invites", headers=alice.headers)
    body = response.json()
    assert response.status_code == 201 and body["team"] == "ants" and body["code"].startswith("lsi_")
    expires = dt.datetime.fromisoformat(body["expires_at"])
    assert dt.timedelta(hours=71) < expires - NOW < dt.timedelta(hours=73)  # Settings.team_invite_hours: 72
    assert body["code"] not in repr(db.scalars(select(TeamInvite.code_sha256)).all())  # kept as a hash only

    joined = join(client, bob, body["code"])
    assert joined.status_code == 200 and joined.json()["members"] == ["alice", "bob"]
    assert client.get("/api/v1/me", headers=bob.headers).json()["team"] == "ants"
    assert [t["members"] for t in client.get("/api/v1/teams", headers=bob.headers).json()["data"]] == [["alice", "bob"]]

    left = client.post("/api/v1/teams/mine/leave", headers=bob.headers)
    assert left.status_code == 200 and left.json()["members"] == ["alice"]
    assert client.get("/api/v1/me", headers=bob.headers).json()["team"] is None
    assert error(client.get("/api/v1/teams/mine", headers=bob.headers)) == (
        404,
        "not_found",
        "bob is in no team: create one (layersched team create NAME) or join one with a code",
    )
    # The stay is kept on record, ended.
    stays = db.scalars(select(TeamMember).order_by(TeamMember.id)).all()
    assert [(m.user_id, m.left_at is not None) for m in stays] == [(alice.user.id, False), (bob.user.id, True)]


def test_refusals_when_creating(client: Any, alice: Account, bob: Account, organiser: Account) -> None:
    assert create(client, alice, "ants").status_code == 201
    assert error(create(client, alice, "bees")) == (
        409,
        "conflict",
        "alice is already in team 'ants': a participant is in one team; leave it first",
    )
    assert error(create(client, bob, "ants")) == (409, "conflict", "a team named 'ants' already exists")
    assert error(create(client, bob, "alice")) == (
        409,
        "conflict",
        "'alice' is the name of a participant: the leaderboard could not tell the two apart",
    )
    assert error(create(client, organiser, "olgas")) == (
        403,
        "forbidden",
        "olga is an organiser: organisers do not compete, so they are in no team",
    )
    assert create(client, bob, "").status_code == 422
    assert create(client, bob, "two  spaces").status_code == 422
    assert create(client, bob, "x" * 101).status_code == 422
    assert error(client.post("/api/v1/teams/mine/invites", headers=bob.headers)) == (
        409,
        "conflict",
        "bob is in no team: create one first (layersched team create NAME)",
    )
    assert error(client.post("/api/v1/teams/mine/leave", headers=bob.headers)) == (409, "conflict", "bob is in no team")
    assert client.get("/api/v1/teams").status_code == 401


def test_refusals_when_joining_change_nothing(
    client: Any, alice: Account, bob: Account, carol: Account, make_account: Any, db: Session
) -> None:
    assert create(client, alice, "ants").status_code == 201
    code = invite(client, alice)
    assert error(join(client, bob, code + "x")) == (
        404,
        "not_found",
        "this invite code is not one the server made: check that it was copied whole",
    )
    assert join(client, bob, "").status_code == 422
    assert join(client, bob, code).status_code == 200
    # Reused: by the one who used it, and by anyone else.
    assert error(join(client, bob, code)) == (409, "conflict", "bob is already in team 'ants'")
    status, _, message = error(join(client, carol, code))
    assert (status, message.split(" at ")[0]) == (409, "this invite code was used already, by bob")
    # Full: ants has two members, the most (the fixture's settings).
    full_code = invite(client, alice)
    assert error(join(client, carol, full_code)) == (
        409,
        "conflict",
        "team 'ants' is full: it has 2 members, the most a team may have",
    )
    # A second team: carol makes one and cannot take up another's invite.
    bob_code = invite(client, bob)
    assert create(client, carol, "cats").status_code == 201
    assert error(join(client, carol, bob_code)) == (
        409,
        "conflict",
        "carol is in team 'cats': a participant is in one team; leave it first (layersched team leave)",
    )
    # Nothing of the refusals stuck: ants is alice and bob, cats is carol, the refused codes are unused and work
    # once there is a seat (an invite is its maker's while they are a member: bob's goes with him).
    assert members(client, alice) == ["alice", "bob"] and members(client, carol) == ["carol"]
    assert client.post("/api/v1/teams/mine/leave", headers=bob.headers).status_code == 200
    dave = make_account("dave")
    assert error(join(client, dave, bob_code)) == (
        409,
        "conflict",
        "this invite code was made by someone no longer in team 'ants'; ask a member for a new one",
    )
    assert join(client, dave, full_code).status_code == 200
    assert members(client, alice) == ["alice", "dave"]


def test_an_expired_invite_is_refused(client: Any, alice: Account, bob: Account, db: Session) -> None:
    assert create(client, alice, "ants").status_code == 201
    _invite, code = storage.create_invite(
        session=db, user=alice.user, valid_hours=1, max_live=6, deadline=None, now=NOW - dt.timedelta(hours=2)
    )
    status, code_name, message = error(join(client, bob, code))
    assert (status, code_name) == (409, "conflict")
    assert message.startswith("this invite code expired at ") and message.endswith(
        "; ask a member of team 'ants' for a new one"
    )
    assert client.get("/api/v1/me", headers=bob.headers).json()["team"] is None


def test_invite_codes_stop_at_the_teams_bound(client: Any, alice: Account, settings: Settings) -> None:
    """On both backends: the bound's refusal reads the oldest code's expiry back (``_check_live_invites``)."""
    assert create(client, alice, "ants").status_code == 201
    first = client.post("/api/v1/teams/mine/invites", headers=alice.headers).json()
    for _ in range(settings.team_live_invites_limit - 1):
        invite(client, alice)
    status, code_name, message = error(client.post("/api/v1/teams/mine/invites", headers=alice.headers))
    assert (status, code_name) == (409, "conflict")
    oldest = message.split("the oldest expires at ")[1].split(": have one used")[0]
    assert dt.datetime.fromisoformat(oldest) == dt.datetime.fromisoformat(first["expires_at"])


def test_after_the_merger_deadline_participants_cannot_change_teams(
    settings: Settings, enqueued: Captured, alice: Account, bob: Account, carol: Account, organiser: Account
) -> None:
    with TestClient(create_app(settings, enqueuer=enqueued)) as before:
        assert create(before, alice, "ants").status_code == 201
        code = invite(before, alice)
    deadline = (NOW - dt.timedelta(minutes=1)).replace(microsecond=0)
    fixed = settings.model_copy(update={"team_merge_deadline": deadline})
    expected = (
        409,
        "conflict",
        f"teams are fixed since the team merger deadline {deadline.isoformat()}: no team can be created, joined or "
        "left any more (an organiser can still change one)",
    )
    with TestClient(create_app(fixed, enqueuer=enqueued)) as after:
        assert error(join(after, bob, code)) == expected
        assert error(create(after, carol, "cats")) == expected
        assert error(after.post("/api/v1/teams/mine/leave", headers=alice.headers)) == expected
        assert error(after.post("/api/v1/teams/mine/invites", headers=alice.headers)) == expected
        # Organisers still can.
        assigned = after.post("/api/v1/admin/teams/ants/members", headers=organiser.headers, json={"user": "bob"})
        assert assigned.status_code == 200 and assigned.json()["members"] == ["alice", "bob"]


# ------------------------------------------------------------------------------------------------- organisers


def test_organisers_create_assign_and_remove(
    client: Any, alice: Account, bob: Account, carol: Account, organiser: Account
) -> None:
    admin = organiser.headers
    assert client.post("/api/v1/admin/teams", headers=admin, json={"name": "owls"}).json()["members"] == []
    for user in ("alice", "bob"):
        assert client.post("/api/v1/admin/teams/owls/members", headers=admin, json={"user": user}).status_code == 200
    assert error(client.post("/api/v1/admin/teams/owls/members", headers=admin, json={"user": "carol"})) == (
        409,
        "conflict",
        "team 'owls' is full: it has 2 members, the most a team may have",
    )
    assert error(client.post("/api/v1/admin/teams/owls/members", headers=admin, json={"user": "olga"})) == (
        403,
        "forbidden",
        "olga is an organiser: organisers do not compete, so they are in no team",
    )
    assert error(client.post("/api/v1/admin/teams/elks/members", headers=admin, json={"user": "carol"})) == (
        404,
        "not_found",
        "team 'elks' does not exist",
    )
    assert error(client.post("/api/v1/admin/teams/owls/members", headers=admin, json={"user": "zed"})) == (
        404,
        "not_found",
        "user 'zed' does not exist",
    )
    assert error(client.delete("/api/v1/admin/teams/owls/members/carol", headers=admin)) == (
        409,
        "conflict",
        "carol is not in team 'owls'",
    )
    removed = client.delete("/api/v1/admin/teams/owls/members/bob", headers=admin)
    assert removed.status_code == 200 and removed.json()["members"] == ["alice"]
    assert client.post("/api/v1/admin/teams", headers=alice.headers, json={"name": "x"}).status_code == 403
    log = client.get("/api/v1/admin/audit-log", headers=admin).json()["data"]
    assert [(e["action"], e["target"], e["detail"]) for e in log][:4] == [
        ("remove_from_team", "team:owls", {"user": "bob"}),
        ("assign_team", "team:owls", {"user": "bob"}),
        ("assign_team", "team:owls", {"user": "alice"}),
        ("create_team", "team:owls", {}),
    ]


# ------------------------------------------------------------------------------------ what a team shares


def test_members_share_one_quota(client: Any, alice: Account, bob: Account, ants: str, db: Session) -> None:
    for account in (alice, bob, alice):  # the quota is 3 a day (conftest's settings)
        response = submit(client, account)
        assert response.status_code == 201
        run_evaluation(db, response.json()["evaluations"][0]["id"])
    assert error(submit(client, bob)) == (
        429,
        "quota_exceeded",
        "daily quota of 3 submissions to phase 'main' used (3 today by team 'ants'); it resets at 00:00 UTC",
    )
    assert client.get("/api/v1/me", headers=bob.headers).json()["submissions_today"] == 3


def test_members_share_the_evaluations_in_flight(client: Any, alice: Account, bob: Account, ants: str) -> None:
    assert submit(client, alice).status_code == 201
    assert submit(client, bob).status_code == 201
    assert error(submit(client, alice)) == (
        429,
        "too_many_in_flight",
        "2 evaluations by team 'ants' are already queued or running (at most 2); wait for one to finish",
    )


def test_a_joiners_submissions_count_against_the_team_quota(
    client: Any, alice: Account, bob: Account, db: Session
) -> None:
    for account in (alice, alice, bob, bob):
        response = submit(client, account)
        assert response.status_code == 201
        run_evaluation(db, response.json()["evaluations"][0]["id"])
    assert create(client, alice, "ants").status_code == 201
    code = invite(client, alice)
    assert error(join(client, bob, code)) == (
        409,
        "conflict",
        "joining team 'ants' would give it 4 submissions to phase 'main' today, over its daily quota of 3 (a "
        "joiner's submissions count against the team's quota); join after 00:00 UTC",
    )
    assert members(client, alice) == ["alice"]
    assert db.scalar(select(TeamInvite.used_at)) is None  # the code is still good for tomorrow


def test_members_read_each_others_submissions_and_logs(
    client: Any, alice: Account, bob: Account, carol: Account, ants: str, db: Session
) -> None:
    submission = submit(client, alice).json()
    run_evaluation(db, submission["evaluations"][0]["id"])
    path = f"/api/v1/submissions/{submission['id']}"
    assert client.get(path, headers=bob.headers).json()["owner"] == "alice"
    logs = client.get(f"{path}/logs", headers=bob.headers).json()["data"]
    assert logs == client.get(f"{path}/logs", headers=alice.headers).json()["data"]  # as alice reads them
    assert {log["scenario"]: log["stdout"] for log in logs} == {"lab-5": "out lab-5", "hub-20": None}  # hidden
    assert [s["id"] for s in client.get("/api/v1/submissions", headers=bob.headers).json()["data"]] == [
        submission["id"]
    ]
    # Nobody else does, and bob no longer once he has left.
    assert client.get(path, headers=carol.headers).status_code == 404
    assert client.get(f"{path}/logs", headers=carol.headers).status_code == 404
    assert client.post("/api/v1/teams/mine/leave", headers=bob.headers).status_code == 200
    assert client.get(path, headers=bob.headers).status_code == 404
    assert client.get("/api/v1/submissions", headers=bob.headers).json()["count"] == 0


def test_a_team_has_one_row_on_each_board(
    client: Any, alice: Account, bob: Account, carol: Account, ants: str, organiser: Account, db: Session
) -> None:
    scored = {}
    for account, public, private in ((alice, 0.9, 0.95), (bob, 0.8, 0.99), (carol, 0.85, 0.9)):
        response = submit(client, account)
        run_evaluation(db, response.json()["evaluations"][0]["id"], public=public, private=private)
        scored[account.user.name] = response.json()["id"]
    board = client.get("/api/v1/leaderboard").json()["rows"]
    assert [(r["participant"], r["members"], r["score"], r["submissions"]) for r in board] == [
        ("ants", ["alice", "bob"], 0.8, 2),  # bob's submission is the team's best
        ("carol", [], 0.85, 1),
    ]
    private = client.get("/api/v1/leaderboard?split=private", headers=organiser.headers).json()["rows"]
    # With nothing selected, a team's two best public entries compete on the private split: alice's 0.95 wins.
    assert [(r["participant"], r["submission_id"], r["score"]) for r in private] == [
        ("carol", scored["carol"], 0.9),
        ("ants", scored["alice"], 0.95),
    ]
    # When bob leaves, his submission goes with him, and the board follows.
    assert client.post("/api/v1/teams/mine/leave", headers=bob.headers).status_code == 200
    board = client.get("/api/v1/leaderboard").json()["rows"]
    assert [(r["participant"], r["members"], r["score"]) for r in board] == [
        ("bob", [], 0.8),
        ("carol", [], 0.85),
        ("ants", ["alice"], 0.9),
    ]


def test_a_team_shares_one_final_selection(client: Any, alice: Account, bob: Account, ants: str, db: Session) -> None:
    ids = []
    for account in (alice, alice, bob):
        response = submit(client, account)
        assert response.status_code == 201, response.text
        run_evaluation(db, response.json()["evaluations"][0]["id"])
        ids.append(response.json()["id"])
    assert client.post(f"/api/v1/submissions/{ids[0]}/select", headers=alice.headers).status_code == 200
    assert client.post(f"/api/v1/submissions/{ids[2]}/select", headers=bob.headers).status_code == 200
    # Any member may change the team's selection, a teammate's submission included.
    assert error(client.post(f"/api/v1/submissions/{ids[1]}/select", headers=bob.headers)) == (
        409,
        "conflict",
        f"team 'ants' has already selected 2 submissions (#{ids[0]}, #{ids[2]}), the most for the final ranking of "
        "phase 'main'; unselect one first",
    )
    assert client.post(f"/api/v1/submissions/{ids[0]}/unselect", headers=bob.headers).status_code == 200
    assert client.post(f"/api/v1/submissions/{ids[1]}/select", headers=bob.headers).status_code == 200


# ---------------------------------------------------------------------------------------------- racing for seats


def test_joins_racing_for_the_last_seat_give_it_to_one(
    client: Any, alice: Account, make_account: Any, settings: Settings
) -> None:
    """Eight participants, each with their own code, join a team with one seat left, all at once: exactly one gets
    it, the others are told the team is full, and the team has two members."""
    assert create(client, alice, "ants").status_code == 201
    racers = [(make_account(f"racer{i}"), invite(client, alice)) for i in range(8)]
    statuses = _race(client, racers)
    assert sorted(s for s, _ in statuses) == [200] + [409] * 7
    assert {m for s, m in statuses if s == 409} == {"team 'ants' is full: it has 2 members, the most a team may have"}
    assert len(members(client, alice)) == 2


def test_joins_racing_with_one_code_use_it_once(client: Any, alice: Account, make_account: Any) -> None:
    assert create(client, alice, "ants").status_code == 201
    code = invite(client, alice)
    statuses = _race(client, [(make_account(f"racer{i}"), code) for i in range(8)])
    assert sorted(s for s, _ in statuses) == [200] + [409] * 7
    assert all(m.startswith("this invite code was used already, by racer") for s, m in statuses if s == 409)
    assert len(members(client, alice)) == 2


def test_one_participant_racing_into_two_teams_ends_in_one(
    client: Any, alice: Account, bob: Account, carol: Account, settings: Settings
) -> None:
    assert create(client, alice, "ants").status_code == 201
    assert create(client, bob, "bees").status_code == 201
    codes = [invite(client, alice), invite(client, bob)]
    statuses = _race(client, [(carol, codes[0]), (carol, codes[1])])
    assert sorted(s for s, _ in statuses) == [200, 409]
    assert sorted(len(members(client, a)) for a in (alice, bob)) == [1, 2]


def _race(client: Any, joins: list[tuple[Account, str]]) -> list[tuple[int, str]]:
    """The joins sent at once (released together by a barrier; each request is a thread of the app, with its own
    database connection); each one's status and error message."""
    barrier = threading.Barrier(len(joins))
    results: list[tuple[int, str]] = []

    def one(account: Account, code: str) -> None:
        barrier.wait()
        response = join(client, account, code)
        results.append((response.status_code, response.json().get("error", {}).get("message", "")))

    threads = [threading.Thread(target=one, args=pair) for pair in joins]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results
