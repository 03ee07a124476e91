"""The leaderboard: best or selected entry per participant, ties, baselines, private split, freezing."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from sqlalchemy.orm import Session

from layersched.server import storage

from .conftest import Account, run_evaluation, score, submit


def entry(client: Any, account: Account, db: Session, public: float, private: float = 1.0, name: str = "s") -> int:
    body = submit(client, account, name=name).json()
    run_evaluation(db, body["evaluations"][0]["id"], public=public, private=private)
    return int(body["id"])


def rows(client: Any, split: str = "public", headers: dict[str, str] | None = None) -> list[tuple[Any, ...]]:
    board = client.get(f"/api/v1/leaderboard?split={split}", headers=headers or {}).json()
    return [(r["rank"], r["participant"], r["score"], r["baseline"]) for r in board["rows"]]


def test_empty(client: Any) -> None:
    assert client.get("/api/v1/leaderboard").json() == {
        "split": "public",
        "frozen": False,
        "published": False,
        "rows": [],
    }


def test_ranking_best_per_participant(client: Any, alice: Account, bob: Account, db: Session) -> None:
    entry(client, alice, db, 0.95, name="a1")
    entry(client, alice, db, 0.85, name="a2")
    entry(client, bob, db, 0.90, name="b1")
    board = client.get("/api/v1/leaderboard").json()
    assert [(r["rank"], r["participant"], r["submission_name"], r["submissions"]) for r in board["rows"]] == [
        (1, "alice", "a2", 2),
        (2, "bob", "b1", 1),
    ]
    first = board["rows"][0]
    assert (first["ci_low"], first["ci_high"]) == (pytest.approx(0.83), pytest.approx(0.87))
    assert set(first["per_scenario"]) == {"lab-5", "hub-20"}


def test_ties_go_to_earlier_submission(client: Any, alice: Account, bob: Account, db: Session) -> None:
    entry(client, bob, db, 0.9)
    entry(client, alice, db, 0.9)
    assert rows(client) == [(1, "bob", 0.9, False), (2, "alice", 0.9, False)]


def test_failed_disqualified_and_unscored_are_left_out(
    client: Any, alice: Account, bob: Account, organiser: Account, db: Session, make_account: Any
) -> None:
    bad = entry(client, alice, db, 0.5)
    entry(client, bob, db, 0.9)
    carol = make_account("carol")
    body = submit(client, carol).json()
    run_evaluation(db, body["evaluations"][0]["id"], fail=("crash", "exit 1"))
    submit(client, bob)  # queued: no score yet
    response = client.post(
        f"/api/v1/admin/submissions/{bad}/disqualify", headers=organiser.headers, json={"reason": "hard-coded seeds"}
    )
    assert response.status_code == 200 and response.json()["disqualified"] == "hard-coded seeds"
    assert rows(client) == [(1, "bob", 0.9, False)]
    shown = client.get(f"/api/v1/submissions/{bad}", headers=alice.headers).json()
    assert shown["disqualified"] == "hard-coded seeds"


def test_baseline_rows(client: Any, alice: Account, db: Session) -> None:
    entry(client, alice, db, 0.9)
    for name, value in (("Greedy", 1.0), ("Random", 1.8)):
        storage.upsert_baseline_result(
            session=db,
            evalset_commitment="c" * 64,
            sim_version="1.0.0",
            baseline=name,
            score_public=score(value),
            score_private=score(value),
        )
    storage.upsert_baseline_result(  # another evaluation set's baseline is not shown
        session=db,
        evalset_commitment="d" * 64,
        sim_version="1.0.0",
        baseline="LRS",
        score_public=score(0.1),
        score_private=None,
    )
    board = client.get("/api/v1/leaderboard").json()
    assert [(r["rank"], r["participant"], r["baseline"], r["submission_id"]) for r in board["rows"]] == [
        (1, "alice", False, 1),
        (None, "Greedy", True, None),
        (None, "Random", True, None),
    ]


def test_private_split_until_published(
    client: Any, alice: Account, bob: Account, organiser: Account, db: Session
) -> None:
    entry(client, alice, db, 0.8, private=1.1)
    entry(client, bob, db, 0.9, private=0.95)
    for headers in ({}, alice.headers):
        response = client.get("/api/v1/leaderboard?split=private", headers=headers)
        assert response.status_code == 403
        assert response.json()["error"] == {
            "code": "forbidden",
            "message": "the private leaderboard is not published yet",
        }
    assert rows(client, "private", organiser.headers) == [(1, "bob", 0.95, False), (2, "alice", 1.1, False)]
    response = client.post("/api/v1/admin/leaderboard/publish", headers=organiser.headers)
    assert response.status_code == 200 and response.json()["published"] is True
    assert rows(client, "private") == [(1, "bob", 0.95, False), (2, "alice", 1.1, False)]


def test_bad_split_422(client: Any) -> None:
    response = client.get("/api/v1/leaderboard?split=secret")
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"


def test_freeze_shows_ranking_at_freeze_time(
    client: Any, alice: Account, bob: Account, organiser: Account, db: Session
) -> None:
    entry(client, alice, db, 0.9)
    response = client.post("/api/v1/admin/leaderboard/freeze", headers=organiser.headers, json={"frozen": True})
    assert response.status_code == 200 and response.json()["frozen"] is True
    bob_id = entry(client, bob, db, 0.5)  # still evaluated while frozen...
    board = client.get("/api/v1/leaderboard").json()
    assert board["frozen"] is True
    assert [(r["rank"], r["participant"]) for r in board["rows"]] == [(1, "alice")]  # ...but not ranked publicly
    assert client.get(f"/api/v1/submissions/{bob_id}", headers=bob.headers).json()["score"]["overall"] == 0.5
    client.post("/api/v1/admin/leaderboard/freeze", headers=organiser.headers, json={"frozen": False})
    assert [r[1] for r in rows(client)] == ["bob", "alice"]


def test_leaderboard_uses_current_evalset(client: Any, alice: Account, organiser: Account, db: Session) -> None:
    submission_id = entry(client, alice, db, 0.9)
    storage.register_evalset(session=db, name="final", commitment="e" * 64, path="x.toml", scenarios=[])
    assert rows(client) == []  # no score on the new set yet
    rerun = client.post(
        f"/api/v1/admin/submissions/{submission_id}/rerun", headers=organiser.headers, json={"evalset": "final"}
    ).json()
    assert rerun["evalset_name"] == "final" and rerun["evalset_commitment"] == "e" * 64
    run_evaluation(db, rerun["id"], public=0.7)
    assert rows(client) == [(1, "alice", 0.7, False)]


def test_frozen_timestamp(client: Any, organiser: Account, db: Session) -> None:
    client.post("/api/v1/admin/leaderboard/freeze", headers=organiser.headers, json={"frozen": True})
    state = storage.get_leaderboard_state(session=db)
    db.refresh(state)
    assert state.frozen_at is not None and state.frozen_at <= dt.datetime.now(dt.timezone.utc)


def test_ladder_shows_a_new_public_score_only_beyond_the_step(
    settings: Any, enqueued: Any, alice: Account, db: Session
) -> None:
    from starlette.testclient import TestClient

    from layersched.server.app import create_app

    laddered = settings.model_copy(update={"public_ladder_step": 0.05})
    with TestClient(create_app(laddered, enqueuer=enqueued)) as client:
        entry(client, alice, db, 0.95, private=0.97, name="first")
        assert rows(client) == [(1, "alice", 0.95, False)]
        entry(client, alice, db, 0.93, private=0.90, name="lucky")  # within the noise: the board does not move
        assert rows(client) == [(1, "alice", 0.95, False)]
        entry(client, alice, db, 0.85, private=0.92, name="real")  # a real improvement is shown
        board = client.get("/api/v1/leaderboard").json()
        assert [(r["submission_name"], r["score"]) for r in board["rows"]] == [("real", 0.85)]
