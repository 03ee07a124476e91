"""Participants' routes on real PostgreSQL and SQLite: success and each failure (401, 404, 413, 422, 429)."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.app import create_app
from layersched.server.body_limits import RequestBodyLimits
from layersched.server.config import Settings

from . import stand_in_track
from .conftest import POLICY, Account, Captured, TestClient, register_stand_in_set, run_evaluation, submit


def error(response: Any) -> tuple[int, str, str]:
    body = response.json()
    return response.status_code, body["error"]["code"], body["error"]["message"]


# ---------------------------------------------------------------------------------------------------- auth and me


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({}, "this route needs a token: send the header 'Authorization: Bearer <token>'"),
        ({"Authorization": "Bearer lst_0000_nope"}, "the bearer token is unknown or revoked"),
        ({"Authorization": "Bearer garbage"}, "the bearer token is unknown or revoked"),
        (
            {"Authorization": "Basic dXNlcjpwdw=="},
            "this route needs a token: send the header 'Authorization: Bearer <token>'",
        ),
    ],
    ids=["missing", "unknown", "malformed", "basic"],
)
def test_401(client: Any, alice: Account, headers: dict[str, str], message: str) -> None:
    response = client.get("/api/v1/me", headers=headers)
    assert error(response) == (401, "unauthorized", message)
    assert response.headers["www-authenticate"] == "Bearer"


def test_wrong_secret_with_known_lookup(client: Any, alice: Account) -> None:
    prefix, lookup, secret = alice.token.split("_", 2)
    forged = f"{prefix}_{lookup}_{'A' * len(secret)}"
    response = client.get("/api/v1/me", headers={"Authorization": f"Bearer {forged}"})
    assert error(response)[:2] == (401, "unauthorized")


def test_me(client: Any, alice: Account) -> None:
    response = client.get("/api/v1/me", headers=alice.headers)
    assert response.status_code == 200
    assert response.json() == {
        "id": alice.user.id,
        "name": "alice",
        "email": "alice@example.org",
        "role": "participant",
        "submissions_today": 0,
        "daily_quota": 3,
        "team": None,  # competes alone
    }


def test_revoked_token_is_refused(client: Any, alice: Account, db: Session) -> None:
    token = storage.authenticate(session=db, token=alice.token)
    assert token is not None
    storage.revoke_token(session=db, token_id=alice.user.tokens[0].id)
    assert error(client.get("/api/v1/me", headers=alice.headers))[:2] == (401, "unauthorized")


def test_tokens_are_stored_hashed(alice: Account, db: Session) -> None:
    row = alice.user.tokens[0]
    assert alice.token not in (row.token_sha256, row.lookup)
    assert row.token_sha256 == hashlib.sha256(alice.token.encode()).hexdigest()


# ---------------------------------------------------------------------------------------------------- submitting


def test_submit_single_file(client: Any, alice: Account, enqueued: Captured, settings: Settings) -> None:
    response = submit(client, alice, name="first try", description="greedy with a twist")
    assert response.status_code == 201, response.text
    body = response.json()
    digest = hashlib.sha256(POLICY).hexdigest()
    assert body["name"] == "first try" and body["description"] == "greedy with a twist"
    assert body["owner"] == "alice" and body["bundle_sha256"] == digest
    assert body["state"] == "queued" and body["progress"] == {"done": 0, "total": 0}
    assert body["error"] is None and body["score"] is None and body["rank"] is None and body["disqualified"] is None
    [evaluation] = body["evaluations"]
    assert evaluation["kind"] == "initial" and evaluation["evalset_commitment"] == "c" * 64
    assert evaluation["bundle_sha256"] == digest
    assert enqueued.calls == [("layersched.evaluate", [evaluation["id"]], "evaluations")]
    stored = settings.bundle_dir / digest[:2] / digest
    assert stored.read_bytes() == POLICY
    assert "policy.py" not in {p.name for p in settings.bundle_dir.rglob("*")}  # never the user's file name


def test_submit_zip(client: Any, alice: Account) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mine/policy.py", POLICY)
        archive.writestr("mine/util.py", "X = 1\n")
    response = submit(client, alice, buffer.getvalue(), filename="mine.zip")
    assert response.status_code == 201, response.text


def test_broker_down_keeps_submission_queued(settings: Settings, alice: Account) -> None:
    """The database is the source of truth: a refused publish leaves a queued evaluation for the reconciler."""
    from kombu.exceptions import OperationalError

    from layersched.server.app import create_app

    from .conftest import TestClient

    def refuse(task_name: str, *, args: list[int], queue: str) -> None:
        raise OperationalError("connection refused")

    with TestClient(create_app(settings, enqueuer=refuse)) as down:
        response = submit(down, alice)
    assert response.status_code == 201
    assert response.json()["state"] == "queued"


@pytest.mark.parametrize(
    ("filename", "content", "code", "message"),
    [
        (
            "p.py",
            b"def policy(env, task, rng)\n    return 0\n",
            "invalid_policy",
            "p.py line 1: syntax error: expected ':'",
        ),
        (
            "p.py",
            b"def choose(env, task, rng):\n    return 0\n",
            "invalid_policy",
            "p.py defines no top-level function 'policy(env, task, rng)'",
        ),
        ("p.exe", b"MZ", "invalid_bundle", "bundle 'p.exe' must be a .py, .zip, .tar.gz or .tgz file"),
    ],
    ids=["syntax-error", "missing-policy", "bad-extension"],
)
def test_submit_422(
    client: Any, alice: Account, enqueued: Captured, filename: str, content: bytes, code: str, message: str
) -> None:
    assert error(submit(client, alice, content, filename=filename)) == (422, code, message)
    assert enqueued.calls == []


def test_the_upload_checks_the_current_sets_track_contract(
    client: Any, alice: Account, enqueued: Captured, db: Session
) -> None:
    """A set on a track whose policy takes two arguments: the lab's three-argument policy is refused, naming the
    track's contract; the track's own is accepted."""
    register_stand_in_set(db)
    assert error(submit(client, alice, POLICY)) == (
        422,
        "invalid_policy",
        "policy.py line 1: policy(env, task, rng) must accept two positional arguments (bins, rng)",
    )
    assert error(submit(client, alice, b"def act(bins, rng):\n    return 0\n")) == (
        422,
        "invalid_policy",
        "policy.py defines no top-level function 'policy(bins, rng)'",
    )
    assert enqueued.calls == []
    assert submit(client, alice, stand_in_track.POLICY).status_code == 201


def test_submit_zip_slip_422(client: Any, alice: Account, settings: Settings) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("policy.py", POLICY)
        archive.writestr("../../outside.py", "")
    response = submit(client, alice, buffer.getvalue(), filename="x.zip")
    assert error(response) == (
        422,
        "invalid_bundle",
        "archive member '../../outside.py' climbs out of the bundle with '..'",
    )
    assert not settings.bundle_dir.exists() or not any(settings.bundle_dir.rglob("*"))


@pytest.mark.parametrize(
    ("form", "where"),
    [({"name": ""}, "name"), ({"name": "x" * 101}, "name"), ({"name": "ok", "description": "d" * 2001}, "description")],
    ids=["empty-name", "long-name", "long-description"],
)
def test_submit_form_422(client: Any, alice: Account, form: dict[str, str], where: str) -> None:
    response = client.post("/api/v1/submissions", headers=alice.headers, files={"file": ("p.py", POLICY)}, data=form)
    status, code, message = error(response)
    assert (status, code) == (422, "invalid_request") and message.startswith(f"{where}: ")


def test_submit_without_file_422(client: Any, alice: Account) -> None:
    response = client.post("/api/v1/submissions", headers=alice.headers, data={"name": "x"})
    assert error(response) == (422, "invalid_request", "file: Field required")


def test_submit_413_by_size(client: Any, alice: Account) -> None:
    big = POLICY + b"#" * 60_000  # over the 50 kB limit of the test settings
    assert error(submit(client, alice, big)) == (
        413,
        "bundle_too_large",
        "bundle 'policy.py' is larger than the limit of 50000 bytes",
    )


def test_submit_413_by_declared_length(client: Any, alice: Account) -> None:
    big = POLICY + b"#" * 200_000  # past the limit and the multipart slack: refused before the body is read
    status, code, message = error(submit(client, alice, big))
    assert (status, code) == (413, "bundle_too_large")
    assert message.endswith("bundles may be at most 50000")


def test_submit_401(client: Any, evalset: Any) -> None:
    response = client.post("/api/v1/submissions", files={"file": ("p.py", POLICY)}, data={"name": "x"})
    assert error(response)[:2] == (401, "unauthorized")


def call_upload(app: Any, headers: dict[str, str], chunks: Iterator[bytes]) -> tuple[int, dict[str, Any], int]:
    """POST /api/v1/submissions straight into the ASGI app, the body in ``chunks`` with no declared length (as
    chunked transfer encoding arrives); returns the status, the JSON body and how many body bytes the app read."""
    read = 0
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal read
        chunk = next(chunks, None)
        read += len(chunk or b"")
        return {"type": "http.request", "body": chunk or b"", "more_body": chunk is not None}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/v1/submissions",
        "raw_path": b"/api/v1/submissions",
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(body), read


def multipart_chunks(total: int, size: int = 64 * 1024) -> Iterator[bytes]:
    yield (
        b'--xx\r\nContent-Disposition: form-data; name="name"\r\n\r\nbig\r\n'
        b'--xx\r\nContent-Disposition: form-data; name="file"; filename="policy.py"\r\n\r\n' + POLICY
    )
    for _ in range(total // size):
        yield b"#" * size
    yield b"\r\n--xx--\r\n"


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({}, "this route needs a token: send the header 'Authorization: Bearer <token>'"),
        ({"Authorization": "Bearer lst_0000_nope"}, "the bearer token is unknown or revoked"),
        (
            {"Authorization": "Basic dXNlcjpwdw=="},
            "this route needs a token: send the header 'Authorization: Bearer <token>'",
        ),
    ],
    ids=["missing", "unknown", "basic"],
)
def test_submit_401_before_the_body_is_read(client: Any, alice: Account, headers: dict[str, str], message: str) -> None:
    """FastAPI reads File/Form parameters before it resolves dependencies: before the fix the whole body was read
    (and spooled to disk) and only then the token refused."""
    status, body, read = call_upload(
        client.app, {**headers, "content-type": "multipart/form-data; boundary=xx"}, multipart_chunks(2_000_000)
    )
    assert (status, body, read) == (401, {"error": {"code": "unauthorized", "message": message}}, 0)


def test_submit_413_stops_reading_at_the_limit(client: Any, alice: Account, db: Session) -> None:
    """No Content-Length: the body is counted as it arrives and reading stops once it passes the limit (50 kB and
    the multipart slack), whatever the form parser was doing; the client gets 413, never the parser's 400."""
    headers = {**alice.headers, "content-type": "multipart/form-data; boundary=xx"}
    status, body, read = call_upload(client.app, headers, multipart_chunks(20_000_000))
    limit = 50_000 + RequestBodyLimits.SLACK
    assert (status, body) == (
        413,
        {
            "error": {
                "code": "bundle_too_large",
                "message": f"the upload is more than {limit} bytes; bundles may be at most 50000",
            }
        },
    )
    assert limit < read <= limit + 64 * 1024 + 300  # one chunk past the limit, the first chunk's form fields
    assert storage.list_submissions(session=db, viewer=alice.user, offset=0, limit=10)[1] == 0


def test_submit_over_the_unpacked_limit_is_refused_at_upload(
    settings: Settings, enqueued: Captured, alice: Account, db: Session
) -> None:
    """With the default limits, a 58 kB zip holding 60 MB used to be accepted (the upload allowed 200 MB unpacked),
    then failed invalid_bundle in the worker (50 MB), charged to the participant. Now it is refused here, free."""
    defaults = Settings(_env_file=None)  # type: ignore[call-arg]
    limits = {name: getattr(defaults, name) for name in ("max_bundle_mb", "max_files", "max_unpacked_mb")}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("policy.py", POLICY)
        archive.writestr("weights.bin", b"\0" * 60_000_000)
    assert len(buffer.getvalue()) < 60_000
    with TestClient(create_app(settings.model_copy(update=limits), enqueuer=enqueued)) as roomy:
        assert error(submit(roomy, alice, buffer.getvalue(), filename="b.zip")) == (
            422,
            "invalid_bundle",
            "the archive unpacks to more than 50000000 bytes (at member 'weights.bin')",
        )
        assert enqueued.calls == []
        assert storage.list_submissions(session=db, viewer=alice.user, offset=0, limit=10)[1] == 0
        assert submit(roomy, alice).status_code == 201  # the quota is whole


def test_submit_409_without_evalset(client: Any, make_account: Any) -> None:
    carol = make_account("carol")
    assert error(submit(client, carol)) == (
        409,
        "conflict",
        "no phase exists yet; submissions open once an organiser registers an evaluation set or creates a phase",
    )


# ---------------------------------------------------------------------------------------------------- quota (429)


def test_too_many_in_flight(client: Any, alice: Account) -> None:
    assert submit(client, alice).status_code == 201
    assert submit(client, alice).status_code == 201
    assert error(submit(client, alice)) == (
        429,
        "too_many_in_flight",
        "2 evaluations are already queued or running (at most 2); wait for one to finish",
    )


def test_daily_quota(client: Any, alice: Account, db: Session) -> None:
    for _ in range(3):
        response = submit(client, alice)
        assert response.status_code == 201
        run_evaluation(db, response.json()["evaluations"][0]["id"], fail=("timeout", "episode e0 took too long"))
    assert error(submit(client, alice)) == (
        429,
        "quota_exceeded",
        "daily quota of 3 submissions to phase 'main' used (3 today); it resets at 00:00 UTC",
    )
    assert client.get("/api/v1/me", headers=alice.headers).json()["submissions_today"] == 3


def test_infrastructure_failures_are_given_back(client: Any, alice: Account, db: Session) -> None:
    for fault in ("participant", "participant", "service"):
        response = submit(client, alice)
        run_evaluation(
            db,
            response.json()["evaluations"][0]["id"],
            fail=("infrastructure", "docker engine unreachable") if fault == "service" else ("crash", "exit 1"),
            infrastructure=fault == "service",
        )
    assert client.get("/api/v1/me", headers=alice.headers).json()["submissions_today"] == 2
    assert submit(client, alice).status_code == 201


def test_organiser_is_not_limited(client: Any, organiser: Account) -> None:
    for _ in range(4):
        assert submit(client, organiser).status_code == 201


def test_reruns_never_touch_quota(client: Any, alice: Account, organiser: Account, db: Session) -> None:
    response = submit(client, alice)
    submission_id = response.json()["id"]
    run_evaluation(db, response.json()["evaluations"][0]["id"])
    for _ in range(3):
        assert (
            client.post(
                f"/api/v1/admin/submissions/{submission_id}/rerun", headers=organiser.headers, json={}
            ).status_code
            == 202
        )
    me = client.get("/api/v1/me", headers=alice.headers).json()
    assert me["submissions_today"] == 1
    assert submit(client, alice).status_code == 201  # the organiser's three queued reruns are not alice's in-flight
    listing = client.get("/api/v1/submissions", headers=alice.headers).json()
    assert listing["count"] == 2  # reruns are evaluations, never cloned submissions


# ---------------------------------------------------------------------------------------------------- reading


def test_status_after_evaluation(client: Any, alice: Account, db: Session) -> None:
    body = submit(client, alice).json()
    run_evaluation(db, body["evaluations"][0]["id"], public=0.9)
    got = client.get(f"/api/v1/submissions/{body['id']}", headers=alice.headers).json()
    assert got["state"] == "succeeded" and got["progress"] == {"done": 2, "total": 2}
    assert got["score"] == {
        "overall": 0.9,
        "ci_low": 0.88,
        "ci_high": 0.92,
        "per_scenario": {"lab-5": pytest.approx(0.882), "hub-20": pytest.approx(0.918)},
    }
    assert got["rank"] == 1
    evaluation = got["evaluations"][0]
    assert evaluation["sim_version"] == "1.0.0" and evaluation["image_digest"] == "sha256:" + "ab" * 32
    assert evaluation["sandbox"] == "process" and evaluation["started_at"] and evaluation["finished_at"]


def test_failed_status_names_reason(client: Any, alice: Account, db: Session) -> None:
    body = submit(client, alice).json()
    run_evaluation(db, body["evaluations"][0]["id"], fail=("invalid_action", "step 3: node 9 is masked"))
    got = client.get(f"/api/v1/submissions/{body['id']}", headers=alice.headers).json()
    assert got["state"] == "failed"
    assert got["error"] == {"category": "invalid_action", "message": "step 3: node 9 is masked"}


def test_other_participant_gets_404(client: Any, alice: Account, bob: Account, organiser: Account) -> None:
    submission_id = submit(client, alice).json()["id"]
    for path in (f"/api/v1/submissions/{submission_id}", f"/api/v1/submissions/{submission_id}/logs"):
        assert error(client.get(path, headers=bob.headers)) == (
            404,
            "not_found",
            f"submission {submission_id} does not exist",
        )
        assert client.get(path, headers=organiser.headers).status_code == 200
    assert error(client.post(f"/api/v1/submissions/{submission_id}/select", headers=bob.headers))[0] == 404
    assert client.get("/api/v1/submissions", headers=bob.headers).json() == {"data": [], "count": 0}
    assert client.get("/api/v1/submissions", headers=organiser.headers).json()["count"] == 1


def test_missing_submission_404(client: Any, alice: Account) -> None:
    assert error(client.get("/api/v1/submissions/999", headers=alice.headers)) == (
        404,
        "not_found",
        "submission 999 does not exist",
    )


def test_logs_hide_hidden_episodes(client: Any, alice: Account, db: Session) -> None:
    body = submit(client, alice).json()
    run_evaluation(db, body["evaluations"][0]["id"])
    logs = client.get(f"/api/v1/submissions/{body['id']}/logs", headers=alice.headers).json()["data"]
    assert logs == [
        {
            "scenario": "hub-20",
            "episode": "e1",
            "hidden": True,
            "status": "ok",
            "step": None,
            "message": "",
            "stdout": None,
            "stderr": None,
        },
        {
            "scenario": "lab-5",
            "episode": "e0",
            "hidden": False,
            "status": "ok",
            "step": None,
            "message": "",
            "stdout": "out lab-5",
            "stderr": "err lab-5",
        },
    ]


def test_list_pagination(client: Any, alice: Account, db: Session) -> None:
    for i in range(3):
        body = submit(client, alice, name=f"s{i}").json()
        run_evaluation(db, body["evaluations"][0]["id"])
    page = client.get("/api/v1/submissions?offset=1&limit=1", headers=alice.headers).json()
    assert page["count"] == 3 and [s["name"] for s in page["data"]] == ["s1"]


@pytest.mark.parametrize("query", ["limit=201", "limit=0", "offset=-1", "limit=abc"], ids=str)
def test_list_pagination_422(client: Any, alice: Account, query: str) -> None:
    assert error(client.get(f"/api/v1/submissions?{query}", headers=alice.headers))[:2] == (422, "invalid_request")


def test_select(client: Any, alice: Account, db: Session) -> None:
    first = submit(client, alice, name="a").json()
    run_evaluation(db, first["evaluations"][0]["id"], public=0.8)
    second = submit(client, alice, name="b").json()
    run_evaluation(db, second["evaluations"][0]["id"], public=0.9)
    board = client.get("/api/v1/leaderboard").json()
    assert [r["submission_name"] for r in board["rows"]] == ["a"]  # best by default
    response = client.post(f"/api/v1/submissions/{second['id']}/select", headers=alice.headers)
    assert response.status_code == 200 and response.json()["selected"] is True
    board = client.get("/api/v1/leaderboard").json()
    # The public board ranks the best public score whatever is selected; the selection is for the final ranking
    # (tests/redteam/test_final_ranking.py).
    assert [r["submission_name"] for r in board["rows"]] == ["a"]
    assert client.get(f"/api/v1/submissions/{first['id']}", headers=alice.headers).json()["selected"] is False


def test_evalset_current(client: Any, evalset: Any) -> None:
    assert client.get("/api/v1/evalsets/current").json() == {
        "name": "sample",
        "commitment": "c" * 64,
        "revealed": False,
        "scenarios": [
            {"name": "lab-5", "weight": 1.0, "public_episodes": 2},
            {"name": "hub-20", "weight": 1.0, "public_episodes": 2},
        ],
        "track": "layers-v1",
        "track_title": "Layer-aware container placement",
        "reference_baseline": "Greedy",
    }


def test_evalset_current_404(client: Any) -> None:
    assert error(client.get("/api/v1/evalsets/current")) == (404, "not_found", "no evaluation set is registered yet")


def test_unknown_route_404_body(client: Any) -> None:
    assert error(client.get("/api/v1/nope")) == (404, "not_found", "no route '/api/v1/nope'")
