"""Phases through the API: creating, opening and closing them, submitting to one, and each phase's own boards."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.models import EvalSet

from .conftest import POLICY, SCENARIOS, Account, register_stand_in_set, run_evaluation, submit

NOW = dt.datetime.now(dt.timezone.utc)
LATER = (NOW + dt.timedelta(days=2)).replace(microsecond=0)
EARLIER = (NOW - dt.timedelta(days=2)).replace(microsecond=0)


def error(response: Any) -> tuple[int, str, str]:
    body = response.json()["error"]
    return response.status_code, body["code"], body["message"]


def to_phase(client: Any, account: Account, phase: str | None, **fields: str) -> Any:
    data = {"name": "p", **fields}
    if phase is not None:
        data["phase"] = phase
    return client.post(
        "/api/v1/submissions",
        headers=account.headers,
        files={"file": ("policy.py", POLICY + f"# {phase} {fields}\n".encode(), "application/octet-stream")},
        data=data,
    )


def create(client: Any, organiser: Account, name: str, evalset: str = "sample", **fields: Any) -> Any:
    body = {"name": name, "evalset": evalset, **fields}
    return client.post("/api/v1/admin/phases", headers=organiser.headers, json=body)


@pytest.fixture
def hidden(db: Session, evalset: EvalSet) -> EvalSet:
    """A second set, not current (the default phase stays on ``sample``)."""
    return storage.register_evalset(
        session=db, name="hidden", commitment="h" * 64, path="h.toml", scenarios=SCENARIOS, current=False
    )


@pytest.fixture
def dev_and_final(client: Any, organiser: Account, hidden: EvalSet) -> None:
    """``dev`` on the sample and ``final`` on the hidden set, both open; ``main`` closed."""
    assert create(client, organiser, "dev", title="Development", daily_quota=5).status_code == 201
    assert create(client, organiser, "final", evalset="hidden", title="Final", daily_quota=1).status_code == 201
    assert client.post("/api/v1/admin/phases/main/close", headers=organiser.headers).status_code == 200


def test_create_lists_and_logs_each_phase(client: Any, organiser: Account, dev_and_final: None) -> None:
    phases = client.get("/api/v1/phases").json()
    assert phases["count"] == 3
    by_name = {p["name"]: p for p in phases["data"]}
    assert {n: (p["evalset"], p["open"], p["daily_quota"]) for n, p in by_name.items()} == {
        "main": ("sample", False, 3),
        "dev": ("sample", True, 5),
        "final": ("hidden", True, 1),
    }
    assert by_name["final"]["title"] == "Final" and by_name["final"]["track"] == "layers-v1"
    log = client.get("/api/v1/admin/audit-log", headers=organiser.headers).json()["data"]
    assert [(e["action"], e["target"]) for e in log][:3] == [
        ("close_phase", "phase:main"),
        ("create_phase", "phase:final"),
        ("create_phase", "phase:dev"),
    ]
    assert log[1]["detail"]["evalset"] == "hidden" and log[1]["detail"]["daily_quota"] == 1


def test_a_submission_goes_to_the_phase_it_names_and_runs_on_its_set(
    client: Any, alice: Account, dev_and_final: None
) -> None:
    response = to_phase(client, alice, "final")
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["phase"] == "final" and body["evaluations"][0]["evalset_name"] == "hidden"
    assert to_phase(client, alice, "dev").json()["evaluations"][0]["evalset_name"] == "sample"


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        ("nope", (404, "not_found", "phase 'nope' does not exist")),
        (None, (409, "conflict", "2 phases are open (dev, final): name one (--phase NAME, or the form field phase)")),
    ],
    ids=["nonexistent", "two-open-none-named"],
)
def test_which_phase_refusals(
    client: Any, alice: Account, dev_and_final: None, phase: str | None, expected: tuple[int, str, str]
) -> None:
    assert error(to_phase(client, alice, phase)) == expected
    query = "" if phase is None else f"?phase={phase}"
    assert error(client.get(f"/api/v1/leaderboard{query}")) == expected
    allowance = client.get(f"/api/v1/me/allowance{query}", headers=alice.headers).json()
    assert allowance["refusal"] == dict(zip(("status", "code", "message"), expected, strict=True))
    assert allowance["phase"] is None


def test_a_closed_phase_refuses_with_its_closing_time(
    client: Any, alice: Account, organiser: Account, dev_and_final: None
) -> None:
    closed = client.post("/api/v1/admin/phases/dev/close", headers=organiser.headers, json={"at": EARLIER.isoformat()})
    assert closed.status_code == 409  # dev opened now: it cannot close before that
    assert error(closed)[2].startswith("phase 'dev' cannot close at ")
    assert client.post("/api/v1/admin/phases/dev/close", headers=organiser.headers).status_code == 200
    closes_at = client.get("/api/v1/phases").json()["data"][1]["closes_at"]
    status, code, message = error(to_phase(client, alice, "dev"))
    assert (status, code) == (409, "conflict")
    when = dt.datetime.fromisoformat(closes_at).isoformat()
    assert message == f"phase 'dev' closed at {when}; uploads are closed"
    # With dev closed, final is the only open phase: no --phase needed any more.
    assert to_phase(client, alice, None).json()["phase"] == "final"


def test_a_phase_not_open_yet_refuses_with_its_opening_time(
    client: Any, alice: Account, organiser: Account, hidden: EvalSet
) -> None:
    assert create(client, organiser, "round2", evalset="hidden", opens_at=LATER.isoformat()).status_code == 201
    assert error(to_phase(client, alice, "round2")) == (
        409,
        "conflict",
        f"phase 'round2' is not open yet: it opens at {LATER.isoformat()}; uploads are closed",
    )
    assert to_phase(client, alice, None).json()["phase"] == "main"  # the only one open
    opened = client.post("/api/v1/admin/phases/round2/open", headers=organiser.headers)
    assert opened.status_code == 200 and opened.json()["open"] is True
    assert to_phase(client, alice, "round2").status_code == 201


def test_a_track_the_phase_does_not_run_is_refused_naming_both(client: Any, alice: Account, db: Session) -> None:
    assert error(to_phase(client, alice, "main", track="standin-v1")) == (
        409,
        "conflict",
        "phase 'main' runs the track 'layers-v1', not 'standin-v1': submit to a phase of 'standin-v1' or build the "
        "policy for 'layers-v1'",
    )
    assert to_phase(client, alice, "main", track="layers-v1").status_code == 201
    register_stand_in_set(db)  # main follows the current set, now on the stand-in track
    assert error(to_phase(client, alice, None, track="layers-v1"))[2].startswith(
        "phase 'main' runs the track 'standin-v1', not 'layers-v1'"
    )


def test_the_quota_is_per_phase(client: Any, alice: Account, db: Session, dev_and_final: None) -> None:
    first = to_phase(client, alice, "final")
    assert first.status_code == 201
    run_evaluation(db, first.json()["evaluations"][0]["id"])
    assert error(to_phase(client, alice, "final")) == (
        429,
        "quota_exceeded",
        "daily quota of 1 submissions to phase 'final' used (1 today); it resets at 00:00 UTC",
    )
    assert to_phase(client, alice, "dev").status_code == 201  # dev's own quota is untouched
    allowance = client.get("/api/v1/me/allowance?phase=dev", headers=alice.headers).json()
    assert (allowance["phase"], allowance["submissions_today"], allowance["daily_quota"]) == ("dev", 1, 5)


def test_each_phase_has_its_own_board_freeze_and_publication(
    client: Any, alice: Account, bob: Account, organiser: Account, db: Session, dev_and_final: None
) -> None:
    for account, phase, public in ((alice, "dev", 0.8), (bob, "final", 0.9)):
        body = to_phase(client, account, phase).json()
        run_evaluation(db, body["evaluations"][0]["id"], public=public)
    boards = {p: client.get(f"/api/v1/leaderboard?phase={p}").json() for p in ("dev", "final", "main")}
    assert {p: [r["participant"] for r in b["rows"]] for p, b in boards.items()} == {
        "dev": ["alice"],
        "final": ["bob"],
        "main": [],
    }
    assert boards["final"]["phase"] == "final"

    frozen = client.post("/api/v1/admin/leaderboard/freeze?phase=dev", headers=organiser.headers, json={"frozen": True})
    assert frozen.status_code == 200 and frozen.json()["phase"] == "dev"
    assert client.get("/api/v1/leaderboard?phase=dev").json()["frozen"] is True
    assert client.get("/api/v1/leaderboard?phase=final").json()["frozen"] is False

    published = client.post("/api/v1/admin/leaderboard/publish?phase=final", headers=organiser.headers)
    assert published.status_code == 200 and published.json()["published"] is True
    assert client.get("/api/v1/leaderboard?phase=final&split=private").status_code == 200
    assert error(client.get("/api/v1/leaderboard?phase=dev&split=private"))[2] == (
        "the private leaderboard of phase 'dev' is not published yet"
    )
    # Publication closes the final phase's uploads, not dev's.
    assert error(to_phase(client, alice, "final"))[2].startswith(
        "the private leaderboard of phase 'final' was published"
    )
    assert to_phase(client, alice, "dev").status_code == 201
    # A published phase is closed: dev is the one open phase now, which an upload or board names by default.
    assert to_phase(client, alice, None).json()["phase"] == "dev"


def test_a_published_phase_shows_closed_everywhere(
    client: Any, alice: Account, organiser: Account, dev_and_final: None
) -> None:
    """Issue 29: publication closes a phase for good, whatever its times say: the phase list, the board page and
    the "N phases are open" refusal all say so."""
    assert client.post("/api/v1/admin/leaderboard/publish?phase=final", headers=organiser.headers).status_code == 200
    phases = {p["name"]: p for p in client.get("/api/v1/phases").json()["data"]}
    assert {n: (p["open"], p["state"]) for n, p in phases.items()} == {
        "main": (False, "closed"),
        "dev": (True, "open"),
        "final": (False, "published"),
    }
    page = client.get("/?phase=final").text
    assert "closed, its final ranking published " in page
    assert "layersched submit . --phase final" not in page
    assert "layersched submit . --phase dev" in client.get("/?phase=dev").text
    # One phase open (dev): the refusal that counts open phases no longer counts final.
    assert client.post("/api/v1/admin/phases/dev/close", headers=organiser.headers).status_code == 200
    assert error(to_phase(client, alice, None)) == (409, "conflict", "no phase is open now (phases: main, dev, final)")
    assert error(to_phase(client, alice, "final"))[2].startswith(
        "the private leaderboard of phase 'final' was published at "
    )


def test_reruns_and_audits_stay_on_the_phase_set(
    client: Any, alice: Account, organiser: Account, db: Session, dev_and_final: None
) -> None:
    body = to_phase(client, alice, "final").json()
    run_evaluation(db, body["evaluations"][0]["id"])
    rerun = client.post(f"/api/v1/admin/submissions/{body['id']}/rerun", headers=organiser.headers)
    assert rerun.status_code == 202 and rerun.json()["evalset_name"] == "hidden"  # not the current set, sample
    audit = client.post(f"/api/v1/admin/submissions/{body['id']}/audit", headers=organiser.headers, json={})
    assert audit.status_code == 202 and audit.json()["evalset_name"] == "hidden"


def test_an_organisers_only_board_is_hidden_from_others(
    client: Any, alice: Account, organiser: Account, db: Session, hidden: EvalSet
) -> None:
    assert create(client, organiser, "check", evalset="hidden", visibility="organisers").status_code == 201
    body = to_phase(client, alice, "check").json()  # participants may submit; they do not see the ranking
    run_evaluation(db, body["evaluations"][0]["id"])
    for headers in ({}, alice.headers):
        assert error(client.get("/api/v1/leaderboard?phase=check", headers=headers)) == (
            403,
            "forbidden",
            "the leaderboard of phase 'check' is shown to organisers only",
        )
    own = client.get(f"/api/v1/submissions/{body['id']}", headers=alice.headers).json()
    assert own["state"] == "succeeded" and own["rank"] is None and own["score"] is not None
    rows = client.get("/api/v1/leaderboard?phase=check", headers=organiser.headers).json()["rows"]
    assert [r["participant"] for r in rows] == ["alice"]
    organisers_page = client.get("/", headers=organiser.headers).text
    assert 'href="/?phase=check"' in organisers_page and "organisers only" in organisers_page
    page = client.get("/", headers=alice.headers).text
    assert "main" in page and "phase=check" not in page  # the one phase alice may see: no list of phases at all
    assert client.get("/?phase=check").status_code == 403


def test_the_board_page_lists_and_links_the_phases(client: Any, alice: Account, dev_and_final: None) -> None:
    page = client.get("/?phase=final")
    assert page.status_code == 200
    for name in ("main", "dev", "final"):
        assert f'href="/?phase={name}"' in page.text
    assert 'aria-current="page" class="phase">Final</a>' in page.text
    assert "layersched submit . --phase final" in page.text
    assert client.get("/?phase=nope").status_code == 404


def test_the_submission_page_links_its_phase(client: Any, alice: Account, dev_and_final: None) -> None:
    body = to_phase(client, alice, "final").json()
    page = client.get(f"/submissions/{body['id']}", headers=alice.headers).text
    assert 'to phase <a href="/?phase=final" id="phase">final</a>' in page


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/api/v1/admin/phases", {"name": "x", "evalset": "sample"}),
        ("post", "/api/v1/admin/phases/main/open", None),
        ("post", "/api/v1/admin/phases/main/close", None),
        ("post", "/api/v1/admin/leaderboard/freeze?phase=main", {"frozen": True}),
        ("post", "/api/v1/admin/leaderboard/publish?phase=main", None),
    ],
    ids=["create", "open", "close", "freeze", "publish"],
)
def test_phase_admin_is_for_organisers(
    client: Any, alice: Account, method: str, path: str, body: Any, db: Session
) -> None:
    logged = storage.list_audit_log(session=db)[1]
    response = client.request(method, path, headers=alice.headers, json=body)
    assert error(response) == (403, "forbidden", "user 'alice' is a participant; this route is for organisers")
    assert storage.list_audit_log(session=db)[1] == logged
    assert client.get("/api/v1/phases").json()["data"][0]["open"] is True  # main unchanged


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"name": "main", "evalset": "sample"}, 409, "phase 'main' exists already"),
        ({"name": "x", "evalset": "nope"}, 404, "evaluation set 'nope' does not exist"),
        (
            {"name": "x", "evalset": "sample", "opens_at": LATER.isoformat(), "closes_at": EARLIER.isoformat()},
            409,
            f"phase 'x' would close at {EARLIER.isoformat()}, not after it opens at {LATER.isoformat()}",
        ),
    ],
    ids=["exists", "no-such-set", "closes-before-opening"],
)
def test_create_refusals(client: Any, organiser: Account, body: Any, status: int, message: str) -> None:
    assert error(client.post("/api/v1/admin/phases", headers=organiser.headers, json=body)) == (
        status,
        "conflict" if status == 409 else "not_found",
        message,
    )


@pytest.mark.parametrize(
    "body",
    [{"name": "Has Space", "evalset": "sample"}, {"name": "x", "evalset": "sample", "opens_at": "2026-01-01T00:00"}],
    ids=["bad-slug", "naive-time"],
)
def test_create_validates_the_body(client: Any, organiser: Account, body: Any) -> None:
    assert client.post("/api/v1/admin/phases", headers=organiser.headers, json=body).status_code == 422


def test_open_and_close_an_unknown_phase(client: Any, organiser: Account) -> None:
    for action in ("open", "close"):
        response = client.post(f"/api/v1/admin/phases/nope/{action}", headers=organiser.headers)
        assert error(response) == (404, "not_found", "phase 'nope' does not exist")


def test_submit_helper_still_reaches_the_one_open_phase(client: Any, alice: Account) -> None:
    assert submit(client, alice).json()["phase"] == "main"


def test_organisers_creating_one_phase_at_once_make_it_once(client: Any, organiser: Account, db: Session) -> None:
    import threading

    n = 8
    barrier = threading.Barrier(n)
    statuses: list[int] = []

    def one() -> None:
        barrier.wait()
        statuses.append(create(client, organiser, "final").status_code)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [201] + [409] * (n - 1)
    log = storage.list_audit_log(session=db, limit=50)[0]
    assert [e.target for e in log if e.action == "create_phase"] == ["phase:final"]


def test_an_organiser_edits_a_phase_and_the_log_says_from_what_to_what(
    client: Any, organiser: Account, alice: Account, hidden: EvalSet
) -> None:
    assert create(client, organiser, "final", evalset="hidden", daily_quota=1).status_code == 201
    later = (NOW + dt.timedelta(days=9)).replace(microsecond=0)
    edited = client.patch(
        "/api/v1/admin/phases/final",
        headers=organiser.headers,
        json={"title": "Final round", "closes_at": later.isoformat(), "daily_quota": None, "visibility": "organisers"},
    )
    assert edited.status_code == 200
    body = edited.json()
    closes = dt.datetime.fromisoformat(body["closes_at"].replace("Z", "+00:00"))
    assert (body["title"], closes, body["daily_quota"], body["visibility"], body["evalset"]) == (
        "Final round",
        later,
        3,  # null: the server's quota
        "organisers",
        "hidden",
    )
    entry = client.get("/api/v1/admin/audit-log", headers=organiser.headers).json()["data"][0]
    assert (entry["action"], entry["target"]) == ("edit_phase", "phase:final")
    assert entry["detail"]["daily_quota"] == {"from": 1, "to": None}
    assert entry["detail"]["closes_at"]["to"] == later.isoformat()
    # Open-ended again; what is left out stays.
    reopened = client.patch("/api/v1/admin/phases/final", headers=organiser.headers, json={"closes_at": None})
    assert reopened.json()["closes_at"] is None and reopened.json()["title"] == "Final round"


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"closes_at": EARLIER.isoformat()}, 409, "phase 'main' would close at "),
        ({"opens_at": LATER.isoformat(), "closes_at": (LATER - dt.timedelta(hours=1)).isoformat()}, 409, "would close"),
        ({"title": None}, 422, "title cannot be null"),
        ({"opens_at": None}, 422, "opens_at cannot be null"),
        ({"daily_quota": -1}, 422, "greater than or equal to 0"),
        ({"evalset": "hidden"}, 422, "Extra inputs are not permitted"),
        ({"closes_at": "2027-01-01T00:00:00"}, 422, "timezone"),
    ],
)
def test_a_bad_edit_is_refused_and_changes_nothing(
    client: Any, organiser: Account, alice: Account, body: dict[str, Any], status: int, message: str
) -> None:
    before = client.get("/api/v1/phases").json()
    response = client.patch("/api/v1/admin/phases/main", headers=organiser.headers, json=body)
    assert response.status_code == status
    assert message in response.text
    assert client.get("/api/v1/phases").json() == before


def test_only_organisers_edit_an_existing_phase(client: Any, organiser: Account, alice: Account) -> None:
    assert client.patch("/api/v1/admin/phases/main", headers=alice.headers, json={"title": "x"}).status_code == 403
    missing = client.patch("/api/v1/admin/phases/nope", headers=organiser.headers, json={"title": "x"})
    assert error(missing) == (404, "not_found", "phase 'nope' does not exist")


def test_phases_with_a_token_say_what_the_caller_used_of_each_quota_today(
    client: Any, alice: Account, bob: Account, dev_and_final: None
) -> None:
    """Issue 29: `login` and `phases` show each open phase's quota with its use today."""
    assert to_phase(client, alice, "final").status_code == 201
    assert to_phase(client, alice, "dev").status_code == 201
    mine = {p["name"]: (p["submissions_today"], p["daily_quota"]) for p in client.get(
        "/api/v1/phases", headers=alice.headers).json()["data"]}  # fmt: skip
    assert mine == {"main": (0, 3), "dev": (1, 5), "final": (1, 1)}
    bobs = {p["name"]: p["submissions_today"] for p in client.get("/api/v1/phases", headers=bob.headers).json()["data"]}
    assert bobs == {"main": 0, "dev": 0, "final": 0}
    assert {p["submissions_today"] for p in client.get("/api/v1/phases").json()["data"]} == {None}


def test_a_participants_list_of_submissions_can_name_a_phase(client: Any, alice: Account, dev_and_final: None) -> None:
    final = to_phase(client, alice, "final").json()["id"]
    dev = to_phase(client, alice, "dev").json()["id"]
    listed = client.get("/api/v1/submissions?phase=final", headers=alice.headers).json()
    assert ([s["id"] for s in listed["data"]], listed["count"]) == ([final], 1)
    everything = client.get("/api/v1/submissions", headers=alice.headers).json()
    assert [s["id"] for s in everything["data"]] == [dev, final]
    assert error(client.get("/api/v1/submissions?phase=nope", headers=alice.headers)) == (
        404,
        "not_found",
        "phase 'nope' does not exist",
    )
