"""Red team of teams (issue 18 items 3-4): membership changes against the quota, the in-flight allowance, the final
selection, name uniqueness and who reads a team's submissions.

The red team found five weaknesses, each first a strict xfail test asserting the safe behaviour; all five are fixed
(a join is checked against every limit one competitor has, an invite is its maker's while they are a member, and
users, teams and baselines share one namespace of names: ``storage.names``) and their tests are plain ones, as are
the attacks the code defended from the start.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.app import create_app
from layersched.server.config import Settings
from layersched.server.models import AuditLogEntry, Submission, Team, TeamInvite
from layersched.server.storage import teams as teams_storage

from ..server import stand_in_track
from ..server.conftest import Account, TestClient, register_stand_in_set, run_evaluation, submit
from ..server.test_api_teams import create, invite, join


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"team_max_size": 3, "daily_quota": 10, "max_in_flight": 2})


@pytest.fixture
def carol(make_account: Any, evalset: Any) -> Account:
    return make_account("carol")


def scored(client: Any, db: Session, account: Account) -> int:
    response = submit(client, account, name=f"p{id(object())}")
    assert response.status_code == 201, response.text
    run_evaluation(db, response.json()["evaluations"][0]["id"])
    sid: int = response.json()["id"]
    return sid


# ------------------------------------------------------------------------------------------------ weaknesses


def test_join_cannot_put_a_team_over_the_final_selection_limit(
    client: Any, alice: Account, bob: Account, settings: Settings, db: Session
) -> None:
    limit = settings.final_submissions
    for account in (alice, bob):
        for _ in range(limit):
            sid = scored(client, db, account)
            assert client.post(f"/api/v1/submissions/{sid}/select", headers=account.headers).status_code == 200
    assert create(client, alice, "ants").status_code == 201
    joined = join(client, bob, invite(client, alice))
    assert (joined.status_code, joined.json()["error"]["message"]) == (
        409,
        f"joining team 'ants' would give it {2 * limit} submissions selected for the final ranking of phase 'main', "
        f"over the most of {limit}; unselect some first",
    )
    db.expire_all()
    owners = storage.member_ids(session=db, user_id=alice.user.id)
    selected = db.scalar(
        select(func.count(Submission.id)).where(Submission.owner_id.in_(owners), Submission.selected.is_(True))
    )
    assert (owners, selected) == ([alice.user.id], limit)


def test_join_cannot_put_a_team_over_the_in_flight_allowance(
    client: Any, alice: Account, bob: Account, settings: Settings, db: Session
) -> None:
    for account in (alice, bob):
        for i in range(settings.max_in_flight):
            assert submit(client, account, name=f"q{i}").status_code == 201
    assert create(client, alice, "ants").status_code == 201
    joined = join(client, bob, invite(client, alice))
    most = settings.max_in_flight
    assert (joined.status_code, joined.json()["error"]["message"]) == (
        409,
        f"joining team 'ants' would give it {2 * most} evaluations queued or running, over the most of {most}; join "
        "once some have finished",
    )
    db.expire_all()
    assert storage.count_in_flight(session=db, user_id=alice.user.id) == most


def test_an_invite_made_by_a_member_who_left_no_longer_admits(
    client: Any, alice: Account, bob: Account, carol: Account
) -> None:
    assert create(client, alice, "ants").status_code == 201
    assert join(client, bob, invite(client, alice)).status_code == 200
    code = invite(client, bob)
    assert client.post("/api/v1/teams/mine/leave", headers=bob.headers).status_code == 200
    refused = join(client, carol, code)
    assert (refused.status_code, refused.json()["error"]["message"]) == (
        409,
        "this invite code was made by someone no longer in team 'ants'; ask a member for a new one",
    )


def test_a_user_cannot_be_named_like_an_existing_team(client: Any, alice: Account, make_account: Any) -> None:
    assert create(client, alice, "ants").status_code == 201
    with pytest.raises(storage.Conflict, match=r"^a team named 'ants' already exists$"):
        make_account("ants")
    with pytest.raises(storage.Conflict, match=r"^a team named 'ANTS' already exists$"):  # nor in other letters
        make_account("ANTS")


def test_a_team_cannot_be_named_like_a_baseline(client: Any, alice: Account, db: Session) -> None:
    register_stand_in_set(db)
    refused = create(client, alice, stand_in_track.REFERENCE.lower())
    assert (refused.status_code, refused.json()["error"]["message"]) == (
        409,
        f"'{stand_in_track.REFERENCE.lower()}' is the name of a baseline: the leaderboard could not tell the two apart",
    )
    assert create(client, alice, "Greedy").status_code == 409  # a built-in track's baseline, scored here or not


# ------------------------------------------------------------------------------------------------ defended


def test_a_non_member_reads_no_team_submission(client: Any, alice: Account, bob: Account, carol: Account) -> None:
    assert create(client, alice, "ants").status_code == 201
    assert join(client, bob, invite(client, alice)).status_code == 200
    sid = submit(client, alice).json()["id"]
    assert client.get(f"/api/v1/submissions/{sid}", headers=bob.headers).status_code == 200
    assert client.get(f"/api/v1/submissions/{sid}", headers=carol.headers).status_code == 404
    assert client.get("/api/v1/submissions", headers=carol.headers).json()["count"] == 0


def test_a_removed_member_loses_access(client: Any, alice: Account, bob: Account, organiser: Account) -> None:
    assert create(client, alice, "ants").status_code == 201
    assert join(client, bob, invite(client, alice)).status_code == 200
    sid = submit(client, alice).json()["id"]
    removed = client.delete("/api/v1/admin/teams/ants/members/bob", headers=organiser.headers)
    assert removed.status_code == 200, removed.text
    assert client.get(f"/api/v1/submissions/{sid}", headers=bob.headers).status_code == 404


def test_participants_cannot_use_the_organisers_team_routes(client: Any, alice: Account, bob: Account) -> None:
    assert create(client, alice, "ants").status_code == 201
    assert client.post("/api/v1/admin/teams", headers=bob.headers, json={"name": "x"}).status_code == 403
    assign = client.post("/api/v1/admin/teams/ants/members", headers=bob.headers, json={"user": "bob"})
    assert assign.status_code == 403
    assert client.delete("/api/v1/admin/teams/ants/members/alice", headers=bob.headers).status_code == 403


def test_an_invite_code_is_used_once(client: Any, alice: Account, bob: Account, carol: Account) -> None:
    assert create(client, alice, "ants").status_code == 201
    code = invite(client, alice)
    assert join(client, bob, code).status_code == 200
    assert join(client, carol, code).status_code == 409
    assert join(client, carol, code[:-1] + ("A" if code[-1] != "A" else "B")).status_code == 404


def test_a_join_over_the_daily_quota_is_refused(client: Any, alice: Account, bob: Account, db: Session) -> None:
    for account, n in ((alice, 6), (bob, 5)):
        for _ in range(n):
            scored(client, db, account)
    assert create(client, alice, "ants").status_code == 201
    assert join(client, bob, invite(client, alice)).status_code == 409  # 11 submissions today, over the quota of 10


def test_a_team_cannot_be_named_like_a_participant(client: Any, alice: Account, bob: Account) -> None:
    assert create(client, alice, "bob").status_code == 409


# ---------------------------------------------------------------------------------------------- issue 30, item 4


def leave(client: Any, account: Account) -> Any:
    return client.post("/api/v1/teams/mine/leave", headers=account.headers)


def test_a_participant_founds_a_bounded_number_of_teams(client: Any, alice: Account, settings: Settings) -> None:
    """The review made and left 1,503 teams in 26.5 s, each keeping its name: founding is bounded, and a team
    its last member left is dissolved (its name free again), so a participant reserves no more names than that."""
    most = settings.team_creations
    for i in range(most):
        assert create(client, alice, f"t{i}").status_code == 201
        assert leave(client, alice).status_code == 200
    refused = create(client, alice, "one more")
    assert (refused.status_code, refused.json()["error"]["message"]) == (
        409,
        f"alice has founded {most} teams, the most a participant may (dissolved ones count too); join a team "
        "with an invite code instead",
    )
    listed = client.get("/api/v1/teams", headers=alice.headers).json()
    assert listed == {"data": [], "count": 0}


def test_a_dissolved_teams_name_is_free_again(
    client: Any, alice: Account, bob: Account, carol: Account, organiser: Account
) -> None:
    assert create(client, alice, "ZOE").status_code == 201
    code = invite(client, alice)
    assert leave(client, alice).json()["members"] == []
    # The review's case: organisers could not create the participant zoe while an empty team ZOE existed.
    made = client.post(
        "/api/v1/admin/users", headers=organiser.headers, json={"name": "zoe", "email": "zoe@example.org"}
    )
    assert made.status_code == 201, made.text
    assert create(client, bob, "owls").status_code == 201
    assert leave(client, bob).status_code == 200
    assert create(client, carol, "OWLS").status_code == 201  # another team, under the freed name
    # The dissolved team's invite admits no one, to it or to the team that took its name.
    refused = join(client, bob, code)
    assert (refused.status_code, refused.json()["error"]["message"]) == (
        409,
        "team 'ZOE' was dissolved when its last member left; this invite code admits no one",
    )


def test_a_team_an_organiser_empties_stays_to_be_filled_again(client: Any, alice: Account, organiser: Account) -> None:
    assert create(client, alice, "ants").status_code == 201
    assert client.delete("/api/v1/admin/teams/ants/members/alice", headers=organiser.headers).status_code == 200
    again = client.post("/api/v1/admin/teams/ants/members", headers=organiser.headers, json={"user": "alice"})
    assert (again.status_code, again.json()["members"]) == (200, ["alice"])


def test_the_teams_are_listed_a_page_at_a_time(client: Any, organiser: Account, alice: Account) -> None:
    for name in ("a1", "a2", "a3"):
        assert client.post("/api/v1/admin/teams", headers=organiser.headers, json={"name": name}).status_code == 201
    first = client.get("/api/v1/teams?limit=2", headers=alice.headers).json()
    rest = client.get("/api/v1/teams?limit=2&offset=2", headers=alice.headers).json()
    assert ([t["name"] for t in first["data"]], first["count"]) == (["a1", "a2"], 3)
    assert ([t["name"] for t in rest["data"]], rest["count"]) == (["a3"], 3)
    assert client.get("/api/v1/teams?limit=201", headers=alice.headers).status_code == 422


# ---------------------------------------------------------------------------------------------- issue 30, item 3


@pytest.fixture
def laddered(settings: Settings, enqueued: Any) -> Iterator[Any]:
    with TestClient(create_app(settings.model_copy(update={"public_ladder_step": 0.05}), enqueuer=enqueued)) as c:
        yield c


def probe(client: Any, db: Session, account: Account, public: float, name: str) -> int:
    response = submit(client, account, name=name)
    assert response.status_code == 201, response.text
    run_evaluation(db, response.json()["evaluations"][0]["id"], public=public)
    sid: int = response.json()["id"]
    return sid


def shown(client: Any, account: Account, sid: int) -> tuple[float, bool]:
    body = client.get(f"/api/v1/submissions/{sid}", headers=account.headers).json()
    return body["score"]["overall"], body["score_revealed"]


def board(client: Any) -> list[tuple[str, str, float]]:
    rows = client.get("/api/v1/leaderboard").json()["rows"]
    return [(r["participant"], r["submission_name"], r["score"]) for r in rows if not r["baseline"]]


def test_leaving_a_team_reveals_nothing_its_ladder_withheld(
    laddered: Any, alice: Account, bob: Account, db: Session
) -> None:
    """The review's reproduction: the team's Ladder showed 0.90 for bob's probe of 0.87; bob left, and read 0.87."""
    c = laddered
    assert create(c, alice, "ants").status_code == 201
    assert join(c, bob, invite(c, alice)).status_code == 200
    probe(c, db, alice, 0.90, "base")
    hidden = probe(c, db, bob, 0.87, "probe")
    assert shown(c, bob, hidden) == (0.90, False)

    assert leave(c, bob).status_code == 200
    assert shown(c, bob, hidden) == (0.90, False)  # not 0.87: what the team's Ladder showed, for good
    # Nor on a row of bob's own: his probe shows alice's 0.90, which ranks her team alone (one evaluation, one
    # competitor: the Ladder review's finding 3), so bob has no row until a probe of his own is revealed.
    assert board(c) == [("ants", "base", 0.90)]
    listed = c.get("/api/v1/submissions", headers=bob.headers).json()["data"]
    assert [(s["name"], s["score"]["overall"]) for s in listed] == [("probe", 0.90)]

    # Back in with a new invite the same day: the team's Ladder goes on where it was, not afresh.
    assert join(c, bob, invite(c, alice)).status_code == 200
    assert shown(c, bob, hidden) == (0.90, False)
    again = probe(c, db, bob, 0.88, "probe again")
    assert shown(c, bob, again) == (0.90, False)
    assert board(c) == [("ants", "base", 0.90)]


def test_a_joiner_keeps_what_their_own_ladder_showed(laddered: Any, alice: Account, bob: Account, db: Session) -> None:
    """Submissions made alone keep their own Ladder's verdicts after a join (the team's Ladder never re-judges
    them), and the team's new probes are judged by the team's Ladder alone."""
    c = laddered
    first = probe(c, db, bob, 0.95, "bob first")
    lucky = probe(c, db, bob, 0.93, "bob lucky")  # hidden by bob's own Ladder
    assert create(c, alice, "ants").status_code == 201
    probe(c, db, alice, 0.92, "alice")
    assert join(c, bob, invite(c, alice)).status_code == 200
    assert (shown(c, bob, first), shown(c, bob, lucky)) == ((0.95, True), (0.95, False))
    assert board(c) == [("ants", "alice", 0.92)]
    assert leave(c, alice).status_code == 200
    assert board(c) == [("alice", "alice", 0.92), ("ants", "bob first", 0.95)]


# ------------------------------------------------------------------------------------- review of issue 30, item 5


@pytest.mark.parametrize("names", [("Twin", "TWIN"), ("Twin", "Twin")], ids=["other-case", "same-case"])
def test_two_teams_made_at_once_under_one_name_in_any_case_end_in_one(
    client: Any, alice: Account, bob: Account, db: Session, monkeypatch: pytest.MonkeyPatch, names: tuple[str, str]
) -> None:
    """Two founders create ``Twin`` and ``TWIN`` at once, each request's name check passing before either inserts
    (held so by a barrier after the check): the database's index on live teams' ``lower(name)`` refuses the second
    with the 409 the check gives, and one team remains."""
    checked = threading.Barrier(2, timeout=30)
    real = teams_storage.name_conflict

    def both_check_first(**kwargs: Any) -> str | None:
        found = real(**kwargs)
        checked.wait()  # neither request has inserted: both checks saw the name free
        return found

    monkeypatch.setattr(teams_storage, "name_conflict", both_check_first)
    results: dict[str, tuple[int, str]] = {}

    def found(account: Account, name: str) -> None:
        response = create(client, account, name)
        results[account.user.name] = (response.status_code, response.json().get("error", {}).get("message", ""))

    threads = [threading.Thread(target=found, args=pair) for pair in zip((alice, bob), names, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(status for status, _ in results.values()) == [201, 409], results
    (loser, (_, message)) = next((who, r) for who, r in results.items() if r[0] == 409)
    assert message == f"a team named {names[0 if loser == 'alice' else 1]!r} already exists"
    db.expire_all()
    live = db.scalars(select(Team.name).where(Team.dissolved_at.is_(None))).all()
    assert len(live) == 1 and live[0] in names


# ------------------------------------------------------------------------------------- review of issue 30, item 6


def audit(db: Session, action: str) -> list[tuple[str, str, dict[str, Any]]]:
    db.expire_all()
    entries = db.scalars(select(AuditLogEntry).where(AuditLogEntry.action == action).order_by(AuditLogEntry.id))
    return [(e.actor, e.target, e.detail) for e in entries]


def test_a_team_named_after_its_founder_stops_bearing_it_when_they_leave(
    client: Any, alice: Account, bob: Account, db: Session
) -> None:
    """alice names her team ``alice`` and leaves it to bob: the board showed a team "alice" without alice (bob's
    row) beside alice's own. The team is renamed ``team-<id>``, its members are told, the audit log has it."""
    made = create(client, alice, "alice")
    assert made.status_code == 201, made.text
    team_id = db.scalar(select(Team.id).where(Team.name == "alice"))
    assert join(client, bob, invite(client, alice)).status_code == 200
    scored(client, db, bob)
    scored(client, db, alice)

    left = leave(client, alice)
    assert left.status_code == 200, left.text
    renamed = f"team-{team_id}"
    assert sorted(row[0] for row in board(client)) == ["alice", renamed]  # alice's own row, and the team's
    assert (left.json()["name"], left.json()["members"]) == (renamed, ["bob"])
    mine = client.get("/api/v1/teams/mine", headers=bob.headers).json()
    assert (mine["name"], mine.get("renamed_from")) == (renamed, "alice")
    assert audit(db, "rename_team") == [("alice", "team:alice", {"to": renamed, "member_left": "alice"})]
    # The team's new name is its own: another team cannot take it, nor anyone the one it bore, while alice has it.
    assert create(client, alice, renamed).json()["error"]["message"] == (
        f"{renamed!r} is kept for the teams the server renames (team-<number>): choose another name"
    )


def test_a_team_named_after_a_member_an_organiser_removes_stops_bearing_it(
    client: Any, alice: Account, bob: Account, organiser: Account, db: Session
) -> None:
    assert create(client, alice, "ALICE").status_code == 201  # her name in other letters is hers too
    team_id = db.scalar(select(Team.id).where(Team.name == "ALICE"))
    assert join(client, bob, invite(client, alice)).status_code == 200
    removed = client.delete("/api/v1/admin/teams/ALICE/members/alice", headers=organiser.headers)
    assert removed.status_code == 200, removed.text
    assert (removed.json()["name"], removed.json().get("renamed_from")) == (f"team-{team_id}", "ALICE")
    assert audit(db, "rename_team") == [("olga", "team:ALICE", {"to": f"team-{team_id}", "member_left": "alice"})]
    # Emptied by an organiser, the team stays (to be filled again), under its new name.
    emptied = client.delete(f"/api/v1/admin/teams/team-{team_id}/members/bob", headers=organiser.headers)
    assert (emptied.status_code, emptied.json()["name"], emptied.json()["members"]) == (200, f"team-{team_id}", [])


def test_a_team_keeps_its_name_when_a_member_it_does_not_name_leaves(
    client: Any, alice: Account, bob: Account, carol: Account, db: Session
) -> None:
    assert create(client, alice, "alice").status_code == 201
    assert join(client, bob, invite(client, alice)).status_code == 200
    assert join(client, carol, invite(client, alice)).status_code == 200
    assert (leave(client, bob).json()["name"], leave(client, carol).json()["name"]) == ("alice", "alice")
    assert leave(client, alice).json()["name"] == "alice"  # the last one out dissolves it: no one bears the name
    assert audit(db, "rename_team") == []


# ------------------------------------------------------------------------------------- review of issue 30, item 7


def test_a_team_holds_a_bounded_number_of_live_invites(
    client: Any, alice: Account, bob: Account, carol: Account, settings: Settings
) -> None:
    """A member made invite codes without end (a row each). A team holds at most twice its size unused and
    unexpired at once; a code used, or made by a member who left, makes room."""
    most = 2 * settings.team_max_size  # the default bound
    assert create(client, alice, "ants").status_code == 201
    made = [client.post("/api/v1/teams/mine/invites", headers=alice.headers).json() for _ in range(most)]
    refused = client.post("/api/v1/teams/mine/invites", headers=alice.headers)
    assert refused.status_code == 409
    message = refused.json()["error"]["message"]
    prefix = f"team 'ants' has {most} invite codes unused and unexpired, the most a team may hold at once ({most}); "
    assert message.startswith(prefix + "the oldest expires at "), message
    assert message.endswith(": have one used, or make a new one after that"), message
    oldest = message[len(prefix + "the oldest expires at ") : -len(": have one used, or make a new one after that")]
    assert dt.datetime.fromisoformat(oldest) == dt.datetime.fromisoformat(made[0]["expires_at"])

    assert join(client, bob, made[0]["code"]).status_code == 200  # used: room for one more
    bobs = invite(client, bob)
    assert client.post("/api/v1/teams/mine/invites", headers=bob.headers).status_code == 409
    assert leave(client, bob).status_code == 200  # bob's code admits no one now: room again
    assert join(client, carol, invite(client, alice)).status_code == 200
    assert join(client, bob, bobs).status_code == 409


def test_invites_made_at_once_stop_at_the_bound(client: Any, alice: Account, settings: Settings, db: Session) -> None:
    most = 2 * settings.team_max_size
    assert create(client, alice, "ants").status_code == 201
    start = threading.Barrier(most + 4, timeout=30)
    statuses: list[int] = []

    def one() -> None:
        start.wait()
        statuses.append(client.post("/api/v1/teams/mine/invites", headers=alice.headers).status_code)

    threads = [threading.Thread(target=one) for _ in range(most + 4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [201] * most + [409] * 4
    db.expire_all()
    assert db.scalar(select(func.count(TeamInvite.id))) == most
