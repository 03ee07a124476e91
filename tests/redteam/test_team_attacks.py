"""Red team of teams (issue 18 items 3-4): membership changes against the quota, the in-flight allowance, the final
selection, name uniqueness and who reads a team's submissions.

The red team found five weaknesses, each first a strict xfail test asserting the safe behaviour; all five are fixed
(a join is checked against every limit one competitor has, an invite is its maker's while they are a member, and
users, teams and baselines share one namespace of names: ``storage.names``) and their tests are plain ones, as are
the attacks the code defended from the start.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.app import create_app
from layersched.server.config import Settings
from layersched.server.models import Submission

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
    assert ("bob", "probe", 0.90) in board(c)  # nor on bob's own row
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
