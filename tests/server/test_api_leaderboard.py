"""The leaderboard: best public entry per participant, the final (private) ranking of the selected submissions,
ties, baselines, freezing, publishing, the selection rules and the Ladder as the owner sees it."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from sqlalchemy.orm import Session

from layersched.server import storage

from . import stand_in_track
from .conftest import Account, register_stand_in_set, run_evaluation, score, submit


def entry(client: Any, account: Account, db: Session, public: float, private: float = 1.0, name: str = "s") -> int:
    body = submit(client, account, name=name).json()
    run_evaluation(db, body["evaluations"][0]["id"], public=public, private=private)
    return int(body["id"])


def rows(client: Any, split: str = "public", headers: dict[str, str] | None = None) -> list[tuple[Any, ...]]:
    board = client.get(f"/api/v1/leaderboard?split={split}", headers=headers or {}).json()
    return [(r["rank"], r["participant"], r["score"], r["baseline"]) for r in board["rows"]]


LAYERS = {"track": "layers-v1", "track_title": "Layer-aware container placement", "reference_baseline": "Greedy"}
STAND_IN = {"track": stand_in_track.TRACK_ID, "track_title": stand_in_track.TITLE, "reference_baseline": "FirstFit"}


def test_empty(client: Any, evalset: Any) -> None:
    # Registering the set made the default phase: its board is empty and described as its set's track.
    assert client.get("/api/v1/leaderboard").json() == {
        "phase": "main",
        "split": "public",
        "frozen": False,
        "published": False,
        "rows": [],
        **LAYERS,
    }


def test_no_phase_yet_is_a_conflict(client: Any) -> None:
    response = client.get("/api/v1/leaderboard")
    assert response.status_code == 409
    assert response.json()["error"]["message"] == (
        "no phase exists yet; submissions open once an organiser registers an evaluation set or creates a phase"
    )


def test_the_board_says_which_track_it_is(client: Any, organiser: Account, db: Session) -> None:
    assert {k: client.get("/api/v1/leaderboard").json()[k] for k in LAYERS} == LAYERS
    register_stand_in_set(db)
    board = client.get("/api/v1/leaderboard").json()
    assert {k: board[k] for k in STAND_IN} == STAND_IN
    assert [r["participant"] for r in board["rows"]] == ["FirstFit"]
    current = client.get("/api/v1/evalsets/current").json()
    assert {k: current[k] for k in STAND_IN} == STAND_IN
    # A frozen board keeps the track it was frozen with, as the published one does.
    client.post("/api/v1/admin/leaderboard/freeze", headers=organiser.headers, json={"frozen": True})
    client.post("/api/v1/admin/leaderboard/publish", headers=organiser.headers)
    storage.register_evalset(session=db, name="sample", commitment="c" * 64, path="s.toml", scenarios=[])
    for split in ("public", "private"):
        board = client.get(f"/api/v1/leaderboard?split={split}").json()
        assert {k: board[k] for k in STAND_IN} == STAND_IN, split


def test_a_snapshot_from_before_tracks_reads_as_layers_v1(client: Any, organiser: Account, db: Session) -> None:
    client.post("/api/v1/admin/leaderboard/freeze", headers=organiser.headers, json={"frozen": True})
    client.post("/api/v1/admin/leaderboard/publish", headers=organiser.headers)
    state = storage.get_leaderboard_state(session=db, phase=storage.get_phase(session=db, name="main"))
    assert state.snapshot is not None and state.private_snapshot is not None
    # What the snapshots of a server before this change hold: no track fields.
    state.snapshot = {"public": {k: v for k, v in state.snapshot["public"].items() if k not in LAYERS}}
    state.private_snapshot = {k: v for k, v in state.private_snapshot.items() if k not in LAYERS}
    db.commit()
    register_stand_in_set(db)  # the current set's track plays no part in a snapshot's
    for split in ("public", "private"):
        board = client.get(f"/api/v1/leaderboard?split={split}").json()
        assert {k: board[k] for k in LAYERS} == LAYERS, split


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


def test_public_board_ignores_the_selection(client: Any, alice: Account, db: Session) -> None:
    entry(client, alice, db, 0.80, name="best")
    chosen = entry(client, alice, db, 0.90, name="chosen")
    assert client.post(f"/api/v1/submissions/{chosen}/select", headers=alice.headers).status_code == 200
    assert [r["submission_name"] for r in client.get("/api/v1/leaderboard").json()["rows"]] == ["best"]


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
            "message": "the private leaderboard of phase 'main' is not published yet",
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
    state = storage.get_leaderboard_state(session=db, phase=storage.get_phase(session=db, name="main"))
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


# ------------------------------------------------------------------------------------------------------ selection


def select(client: Any, account: Account, submission_id: int, action: str = "select") -> Any:
    return client.post(f"/api/v1/submissions/{submission_id}/{action}", headers=account.headers)


def test_selection_limit_names_the_selected(client: Any, alice: Account, organiser: Account, db: Session) -> None:
    ids = [entry(client, alice, db, 0.9, private=p, name=f"s{i}") for i, p in enumerate((1.0, 1.1, 0.8))]
    for submission_id in ids[:2]:
        response = select(client, alice, submission_id)
        assert response.status_code == 200 and response.json()["selected"] is True
    assert select(client, alice, ids[0]).status_code == 200  # selecting a selected one changes nothing
    response = select(client, alice, ids[2])
    assert response.status_code == 409
    assert response.json()["error"] == {
        "code": "conflict",
        "message": f"alice has already selected 2 submissions (#{ids[0]}, #{ids[1]}), the most for the final "
        "ranking of phase 'main'; unselect one first",
    }
    response = select(client, alice, ids[1], "unselect")
    assert response.status_code == 200 and response.json()["selected"] is False
    assert select(client, alice, ids[1], "unselect").status_code == 200  # and unselecting again neither
    assert select(client, alice, ids[2]).status_code == 200
    assert rows(client, "private", organiser.headers) == [(1, "alice", 0.8, False)]
    listed = client.get("/api/v1/submissions", headers=alice.headers).json()["data"]
    assert [(s["name"], s["selected"]) for s in listed] == [("s2", True), ("s1", False), ("s0", True)]


def test_only_own_scored_submissions_can_be_selected(
    client: Any, alice: Account, bob: Account, organiser: Account, db: Session
) -> None:
    bobs = entry(client, bob, db, 0.9)
    for action in ("select", "unselect"):
        assert select(client, alice, bobs, action).json()["error"] == {
            "code": "not_found",
            "message": f"submission {bobs} does not exist",
        }
    queued = submit(client, alice, name="queued").json()["id"]
    failed = submit(client, alice, name="failed").json()
    run_evaluation(db, failed["evaluations"][0]["id"], fail=("crash", "exit 1"))
    for submission_id, state in ((queued, "queued"), (failed["id"], "failed")):
        response = select(client, alice, submission_id)
        assert response.status_code == 409
        assert response.json()["error"]["message"] == (
            f"submission {submission_id} has no score on the evaluation set 'sample' (it is {state}); "
            "only a scored submission can be selected"
        )
    cheat = entry(client, alice, db, 0.5)
    client.post(f"/api/v1/admin/submissions/{cheat}/disqualify", headers=organiser.headers, json={"reason": "seeds"})
    response = select(client, alice, cheat)
    assert response.status_code == 409
    assert response.json()["error"]["message"] == f"submission {cheat} is disqualified and cannot be selected"


def test_each_selection_change_shows_on_the_private_board(
    client: Any, alice: Account, bob: Account, organiser: Account, db: Session
) -> None:
    a1, a2 = (entry(client, alice, db, 0.9, private=p) for p in (1.4, 1.3))
    b3, b4 = (entry(client, bob, db, 0.9, private=p) for p in (1.2, 1.1))
    for account, submission_id in ((alice, a1), (bob, b4)):
        select(client, account, submission_id)
    assert rows(client, "private", organiser.headers) == [(1, "bob", 1.1, False), (2, "alice", 1.4, False)]
    # {1, 4} and then {2, 3} selected: as many, with the same sum of ids. The board's cache key still moves.
    for account, submission_id in ((alice, a1), (bob, b4)):
        select(client, account, submission_id, "unselect")
    for account, submission_id in ((alice, a2), (bob, b3)):
        select(client, account, submission_id)
    assert (a1 + b4, a2 + b3) == (5, 5)
    assert rows(client, "private", organiser.headers) == [(1, "bob", 1.2, False), (2, "alice", 1.3, False)]


def test_deadline_setting_needs_its_time_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import ValidationError

    from layersched.server.config import Settings

    monkeypatch.setenv("LAYERSCHED_SUBMISSION_DEADLINE", "2026-06-30T23:59:00Z")
    monkeypatch.setenv("LAYERSCHED_FINAL_SUBMISSIONS", "3")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.submission_deadline == dt.datetime(2026, 6, 30, 23, 59, tzinfo=dt.timezone.utc)
    assert settings.final_submissions == 3
    monkeypatch.setenv("LAYERSCHED_SUBMISSION_DEADLINE", "2026-06-30T23:59:00")  # whose 23:59?
    with pytest.raises(ValidationError, match="submission_deadline\n  Input should have timezone info"):
        Settings(_env_file=None)  # type: ignore[call-arg]


def test_deadline_ahead_leaves_everything_open(settings: Any, enqueued: Any, alice: Account, db: Session) -> None:
    from starlette.testclient import TestClient

    from layersched.server.app import create_app

    ahead = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)
    with TestClient(create_app(settings.model_copy(update={"submission_deadline": ahead}), enqueuer=enqueued)) as c:
        submission_id = entry(c, alice, db, 0.9)
        assert select(c, alice, submission_id).status_code == 200
        assert select(c, alice, submission_id, "unselect").status_code == 200


# ------------------------------------------------------------------------------------------- the Ladder, owner's view


def test_the_owner_sees_the_laddered_public_score(
    settings: Any, enqueued: Any, alice: Account, organiser: Account, db: Session
) -> None:
    """The review's reproduction: with step 0.05 the board showed 0.95 and the owner's API 0.93."""
    from starlette.testclient import TestClient

    from layersched.server.app import create_app

    with TestClient(create_app(settings.model_copy(update={"public_ladder_step": 0.05}), enqueuer=enqueued)) as c:
        first = entry(c, alice, db, 0.95, name="first")
        lucky = entry(c, alice, db, 0.93, name="lucky")
        assert rows(c) == [(1, "alice", 0.95, False)]
        shown = c.get(f"/api/v1/submissions/{first}", headers=alice.headers).json()
        own = c.get(f"/api/v1/submissions/{lucky}", headers=alice.headers).json()
        assert own["score"]["overall"] == 0.95  # not 0.93: the board did not move, and neither does this
        assert (own["score"], own["score_revealed"], own["rank"]) == (shown["score"], False, None)
        assert (shown["score"]["overall"], shown["score_revealed"], shown["rank"]) == (0.95, True, 1)
        listed = c.get("/api/v1/submissions", headers=alice.headers).json()["data"]
        assert [(s["name"], s["score"]["overall"], s["score_revealed"]) for s in listed] == [
            ("lucky", 0.95, False),
            ("first", 0.95, True),
        ]
        selected = select(c, alice, lucky).json()
        assert (selected["selected"], selected["score"]["overall"]) == (True, 0.95)
        # Organisers keep the raw public score.
        raw = c.get(f"/api/v1/submissions/{lucky}", headers=organiser.headers).json()
        assert (raw["score"]["overall"], raw["score_revealed"]) == (0.93, None)
        evaluation = raw["evaluations"][0]["id"]
        detail = c.get(f"/api/v1/admin/evaluations/{evaluation}", headers=organiser.headers).json()
        assert detail["score_public"]["overall"] == 0.93


def test_a_frozen_laddered_board_stays_laddered(
    settings: Any, enqueued: Any, alice: Account, organiser: Account, db: Session
) -> None:
    from starlette.testclient import TestClient

    from layersched.server.app import create_app

    with TestClient(create_app(settings.model_copy(update={"public_ladder_step": 0.05}), enqueuer=enqueued)) as c:
        entry(c, alice, db, 0.95, name="first")
        entry(c, alice, db, 0.93, name="lucky")
        c.post("/api/v1/admin/leaderboard/freeze", headers=organiser.headers, json={"frozen": True})
        assert rows(c) == [(1, "alice", 0.95, False)]


def test_without_the_ladder_the_owner_sees_the_raw_score(client: Any, alice: Account, db: Session) -> None:
    entry(client, alice, db, 0.95)
    lucky = entry(client, alice, db, 0.93)
    own = client.get(f"/api/v1/submissions/{lucky}", headers=alice.headers).json()
    assert (own["score"]["overall"], own["score_revealed"], own["rank"]) == (0.93, None, 1)


def test_a_set_on_a_track_this_server_does_not_know_is_a_clear_503(client: Any, alice: Account, db: Session) -> None:
    """A set registered by a process that had the track's module (LAYERSCHED_TRACK_MODULES) read by a server
    started without it: every page of its board, and an upload, say what is missing instead of a 500."""
    storage.register_evalset(
        session=db, name="ghost", commitment="g" * 64, path="g.toml", scenarios=[], track="ghost-v1"
    )
    message = "the evaluation set's track 'ghost-v1' is not known to this server (known: "
    for response in (client.get("/api/v1/leaderboard"), client.get("/api/v1/evalsets/current"), submit(client, alice)):
        assert response.status_code == 503, response.text
        body = response.json()["error"]
        assert body["code"] == "track_unavailable"
        assert body["message"].startswith(message) and "layers-v1" in body["message"], body
        assert body["message"].endswith(
            "the organisers must name its module in LAYERSCHED_TRACK_MODULES and restart it"
        )
