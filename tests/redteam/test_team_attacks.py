"""Red team of teams (issue 18 items 3-4): membership changes against the quota, the in-flight allowance, the final
selection, name uniqueness and who reads a team's submissions.

Each weakness found is a test that asserts the safe behaviour and is marked ``xfail(strict=True)``: it fails while
the weakness exists (so the branch stays green) and turns into an unexpected pass, which fails the run, once fixed.
Attacks that the code defends are plain tests, to keep them defended.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.config import Settings
from layersched.server.models import Submission

from ..server import stand_in_track
from ..server.conftest import Account, register_stand_in_set, run_evaluation, submit


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"team_max_size": 3, "daily_quota": 10, "max_in_flight": 2})


@pytest.fixture
def carol(make_account: Any, evalset: Any) -> Account:
    return make_account("carol")


def create(client: Any, account: Account, name: str) -> Any:
    return client.post("/api/v1/teams", headers=account.headers, json={"name": name})


def invite(client: Any, account: Account) -> str:
    response = client.post("/api/v1/teams/mine/invites", headers=account.headers)
    assert response.status_code == 201, response.text
    code: str = response.json()["code"]
    return code


def join(client: Any, account: Account, code: str) -> Any:
    return client.post("/api/v1/teams/join", headers=account.headers, json={"code": code})


def scored(client: Any, db: Session, account: Account) -> int:
    response = submit(client, account, name=f"p{id(object())}")
    assert response.status_code == 201, response.text
    run_evaluation(db, response.json()["evaluations"][0]["id"])
    sid: int = response.json()["id"]
    return sid


# ------------------------------------------------------------------------------------------------ weaknesses


@pytest.mark.xfail(
    strict=True,
    reason="join_team checks the daily quota only, not the final selection: two participants who each selected "
    "final_submissions alone then join, and the team holds twice the limit in the final ranking",
)
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
    db.expire_all()
    owners = storage.member_ids(session=db, user_id=alice.user.id)
    selected = db.scalar(
        select(func.count(Submission.id)).where(Submission.owner_id.in_(owners), Submission.selected.is_(True))
    )
    assert joined.status_code == 409 or selected <= limit, (joined.status_code, selected)


@pytest.mark.xfail(
    strict=True,
    reason="join_team does not check the in-flight allowance: a joiner's queued evaluations are added to the "
    "team's, which then has more in flight than max_in_flight",
)
def test_join_cannot_put_a_team_over_the_in_flight_allowance(
    client: Any, alice: Account, bob: Account, settings: Settings, db: Session
) -> None:
    for account in (alice, bob):
        for i in range(settings.max_in_flight):
            assert submit(client, account, name=f"q{i}").status_code == 201
    assert create(client, alice, "ants").status_code == 201
    joined = join(client, bob, invite(client, alice))
    db.expire_all()
    in_flight = storage.count_in_flight(session=db, user_id=alice.user.id)
    assert joined.status_code == 409 or in_flight <= settings.max_in_flight, (joined.status_code, in_flight)


@pytest.mark.xfail(
    strict=True,
    reason="an invite outlives its maker's membership: a member who left (or was removed) still holds codes that "
    "add people to a team they are no longer in",
)
def test_an_invite_made_by_a_member_who_left_no_longer_admits(
    client: Any, alice: Account, bob: Account, carol: Account
) -> None:
    assert create(client, alice, "ants").status_code == 201
    assert join(client, bob, invite(client, alice)).status_code == 200
    code = invite(client, bob)
    assert client.post("/api/v1/teams/mine/leave", headers=bob.headers).status_code == 200
    assert join(client, carol, code).status_code != 200


@pytest.mark.xfail(
    strict=True,
    reason="create_team refuses a user's name, but create_user does not refuse a team's: a participant registered "
    "after team 'ants' exists is called 'ants' too, and the boards cannot tell the two rows apart",
)
def test_a_user_cannot_be_named_like_an_existing_team(client: Any, alice: Account, make_account: Any) -> None:
    assert create(client, alice, "ants").status_code == 201
    with pytest.raises(Exception):  # noqa: B017 - any refusal will do
        make_account("ants")


@pytest.mark.xfail(
    strict=True,
    reason="create_team checks users' and teams' names, not baselines': a team can be named like the set's "
    "reference baseline, whose row the board's scoring note calls 1.0 (low: the page shows a badge and members)",
)
def test_a_team_cannot_be_named_like_a_baseline(client: Any, alice: Account, db: Session) -> None:
    register_stand_in_set(db)
    assert create(client, alice, stand_in_track.REFERENCE).status_code == 409


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
