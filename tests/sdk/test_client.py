"""Unit tests of the client's decoding, error mapping and upload framing (httpx.MockTransport: pure logic).
The same calls against the real app are in test_cli.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from layersched.sdk import errors
from layersched.sdk.bundle import make_bundle
from layersched.sdk.client import Client, Submission

SUBMISSION: dict[str, Any] = {
    "id": 7,
    "name": "mlp",
    "description": "",
    "owner": "alice",
    "created_at": "2026-01-01T00:00:00Z",
    "bundle_sha256": "a" * 64,
    "state": "running",
    "disqualified": None,
    "progress": {"done": 1, "total": 4},
    "error": None,
    "score": None,
    "rank": None,
    "evaluations": [],
    "future_field": "ignored",
}


def client_for(handler: Any) -> Client:
    return Client("http://test", "tok", transport=httpx.MockTransport(handler))


def test_decodes_a_submission_and_ignores_unknown_fields() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=SUBMISSION)

    with client_for(handler) as client:
        sub = client.submission(7)
    assert sub == Submission(
        id=7,
        name="mlp",
        owner="alice",
        created_at="2026-01-01T00:00:00Z",
        bundle_sha256="a" * 64,
        state="running",
        progress=sub.progress,
    )
    assert (sub.progress.done, sub.progress.total, sub.finished) == (1, 4, False)
    assert seen[0].url.path == "/api/v1/submissions/7"
    assert seen[0].headers["Authorization"] == "Bearer tok"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({**SUBMISSION, "id": "7"}, "submission.id: expected an integer, got '7'"),
        ({k: v for k, v in SUBMISSION.items() if k != "state"}, "submission: missing field 'state' in "),
        ({**SUBMISSION, "progress": {"done": 1}}, "submission.progress: missing field 'total' in {'done': 1}"),
        (
            {**SUBMISSION, "score": {"overall": "x", "ci_low": 1, "ci_high": 1, "per_scenario": {}}},
            "submission.score.overall: expected a number, got 'x'",
        ),
    ],
    ids=["wrong-type", "missing-field", "nested-missing", "nested-type"],
)
def test_a_response_off_the_contract_is_a_server_error(body: dict[str, Any], message: str) -> None:
    with client_for(lambda r: httpx.Response(200, json=body)) as client, pytest.raises(errors.ServerError) as exc:
        client.submission(7)
    assert str(exc.value).startswith(message)


@pytest.mark.parametrize(
    ("status", "code", "cls"),
    [
        (401, "unauthorized", errors.AuthError),
        (404, "not_found", errors.NotFound),
        (413, "bundle_too_large", errors.BundleRejected),
        (429, "quota_exceeded", errors.QuotaExceeded),
    ],
    ids=["401", "404", "413", "429"],
)
def test_error_bodies_become_sdk_errors(status: int, code: str, cls: type[errors.ApiError]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json={"error": {"code": code, "message": f"{code} happened"}})

    with client_for(handler) as client, pytest.raises(cls) as exc:
        client.me()
    assert (exc.value.status, exc.value.code, str(exc.value)) == (status, code, f"{code} happened")


def test_a_proxy_error_page_is_a_server_error() -> None:
    with (
        client_for(lambda r: httpx.Response(502, text="<html>Bad Gateway</html>")) as client,
        pytest.raises(errors.ServerError) as exc,
    ):
        client.me()
    assert str(exc.value) == "GET /api/v1/me failed with HTTP 502 Bad Gateway: '<html>Bad Gateway</html>'"
    assert exc.value.code == "http_502"


def test_transport_failures_are_server_unreachable() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with client_for(refuse) as client, pytest.raises(errors.ServerUnreachable) as exc:
        client.me()
    assert str(exc.value) == "cannot reach the server at http://test: [Errno 111] Connection refused"
    with client_for(slow) as client, pytest.raises(errors.ServerUnreachable) as exc:
        client.me()
    assert str(exc.value) == "the server at http://test did not answer GET /api/v1/me within 30 s"


def test_upload_reports_progress_and_sends_valid_multipart(tmp_path: Path) -> None:
    path = tmp_path / "p.py"
    path.write_bytes(b"def policy(env, task, rng):\n    return 0\n" * 2000)  # ~84 kB: several chunks
    bundle = make_bundle(path)
    received: dict[str, Any] = {}

    def handler(request: httpx.Request) -> httpx.Response:
        body = request.read()
        received["length"] = int(request.headers["Content-Length"])
        received["body"] = body
        received["type"] = request.headers["Content-Type"]
        return httpx.Response(201, json={**SUBMISSION, "state": "queued"})

    progress: list[tuple[int, int]] = []
    with client_for(handler) as client:
        sub = client.submit(bundle, name='my "best"', description="d", on_progress=lambda s, t: progress.append((s, t)))
    assert sub.state == "queued"
    assert received["length"] == len(received["body"]) == progress[-1][0] == progress[-1][1]
    assert len(progress) > 1 and [s for s, _ in progress] == sorted(s for s, _ in progress)
    boundary = received["type"].split("boundary=")[1]
    parts = received["body"].split(f"--{boundary}".encode())
    assert b'name="name"\r\n\r\nmy "best"\r\n' in parts[1]
    assert parts[3] == (
        b'\r\nContent-Disposition: form-data; name="file"; filename="p.py"\r\nContent-Type: text/x-python\r\n\r\n'
        + bundle.data
        + b"\r\n"
    )
    assert parts[4] == b"--\r\n"


def test_wait_polls_until_finished_and_survives_a_brief_outage() -> None:
    states = iter(["queued", "outage", "running", "succeeded"])

    def handler(request: httpx.Request) -> httpx.Response:
        state = next(states)
        if state == "outage":
            raise httpx.ConnectError("restarting", request=request)
        return httpx.Response(200, json={**SUBMISSION, "state": state})

    sleeps: list[float] = []
    seen: list[str] = []
    with client_for(handler) as client:
        final = client.wait(7, on_update=lambda s: seen.append(s.state), poll_interval=1.0, sleep=sleeps.append)
    assert final.state == "succeeded"
    assert seen == ["queued", "running", "succeeded"]
    assert sleeps == [1.0, 2.0, 1.0]


def test_wait_gives_up_after_repeated_outages() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("down", request=request)

    with client_for(handler) as client, pytest.raises(errors.ServerUnreachable):
        client.wait(7, sleep=lambda s: None)


def test_leaderboard_needs_no_token() -> None:
    board = {
        "split": "public",
        "frozen": False,
        "published": False,
        "rows": [
            {
                "rank": None,
                "participant": "Greedy",
                "submission_id": None,
                "submission_name": "Greedy",
                "score": 1.0,
                "ci_low": 1.0,
                "ci_high": 1.0,
                "per_scenario": {"lab": 1.0},
                "submissions": 0,
                "submitted_at": None,
                "baseline": True,
            },
        ],
    }

    def handler(request: httpx.Request) -> httpx.Response:
        assert "Authorization" not in request.headers
        assert request.url.params["split"] == "public"
        return httpx.Response(200, json=board)

    with Client("http://test", transport=httpx.MockTransport(handler)) as client:
        decoded = client.leaderboard()
    assert decoded.rows[0].baseline and decoded.rows[0].rank is None
    assert json.loads(json.dumps(board))["rows"][0]["score"] == decoded.rows[0].score


@pytest.mark.parametrize(
    ("extra", "track", "reference"),
    [
        ({}, "layers-v1", "Greedy"),
        (
            {"track": "standin-v1", "track_title": "Stand-in", "reference_baseline": "FirstFit"},
            "standin-v1",
            "FirstFit",
        ),
    ],
    ids=["a-server-older-than-tracks", "a-board-on-another-track"],
)
def test_the_board_and_set_name_their_reference(extra: dict[str, Any], track: str, reference: str) -> None:
    # The server's word is taken as it is: the client need not know the track (a student's older package).
    bodies = {
        "/api/v1/leaderboard": {"split": "public", "frozen": False, "published": False, "rows": [], **extra},
        "/api/v1/evalsets/current": {"name": "toy", "commitment": "t" * 64, "scenarios": [], **extra},
    }
    with Client(
        "http://test", transport=httpx.MockTransport(lambda r: httpx.Response(200, json=bodies[r.url.path]))
    ) as c:
        board, evalset = c.leaderboard(), c.current_evalset()
    assert (board.track, board.reference) == (evalset.track, evalset.reference) == (track, reference)


def test_against_the_live_app(live_server: Any, policy_file: Path) -> None:
    with Client(live_server.url, live_server.tokens["alice"]) as client:
        me = client.me()
        assert (me.name, me.role, me.submissions_today, me.daily_quota) == ("alice", "participant", 0, 2)
        evalset = client.current_evalset()
        assert (evalset.name, evalset.commitment) == ("sample", "c" * 64)
        assert [(s.name, s.public_episodes) for s in evalset.scenarios] == [("lab-300", 2), ("official-5n", 2)]
        first = client.submit(make_bundle(policy_file), name="one")
        second = client.submit(make_bundle(policy_file), name="two", description="second try")
        page = client.submissions(limit=1)
        assert page.count == 2 and len(page.data) == 1
        assert {s.id for s in client.submissions().data} == {first.id, second.id}
        assert client.submission(second.id).description == "second try"
        assert client.logs(first.id) == []
        with pytest.raises(errors.NotFound):
            client.submission(999)
        with pytest.raises(errors.Forbidden):
            client.admin_publish()
        with pytest.raises(errors.QuotaExceeded) as exc:
            client.submit(make_bundle(policy_file), name="three")
        assert exc.value.status == 429
    with Client(live_server.url, "wrong") as client, pytest.raises(errors.AuthError) as auth:
        client.me()
    assert (auth.value.status, auth.value.code) == (401, "unauthorized")


# ---------------------------------------------------------------------------------------------- allowance


@pytest.mark.parametrize(
    ("refusal", "expected"),
    [
        ({"status": 429, "code": "quota_exceeded", "message": "daily quota of 2 used"}, errors.QuotaExceeded),
        ({"status": 429, "code": "too_many_in_flight", "message": "2 queued"}, errors.QuotaExceeded),
        ({"status": 409, "code": "conflict", "message": "uploads are closed"}, errors.Conflict),
    ],
    ids=["quota", "in-flight", "closed"],
)
def test_a_refused_allowance_raises_the_uploads_error(refusal: dict[str, Any], expected: type[Exception]) -> None:
    body = {"submissions_today": 2, "daily_quota": 2, "in_flight": 0, "max_in_flight": 2, "refusal": refusal}
    with client_for(lambda request: httpx.Response(200, json=body)) as client:
        allowance = client.allowance()
    with pytest.raises(expected) as exc:
        allowance.raise_if_refused()
    assert str(exc.value) == refusal["message"]


@pytest.mark.parametrize(
    ("me_status", "raised"), [(200, None), (401, errors.AuthError)], ids=["token-ok", "token-wrong"]
)
def test_a_server_without_the_allowance_route_still_has_the_token_checked_first(
    me_status: int, raised: type[Exception] | None
) -> None:
    from layersched.sdk.phase_choice import _check_allowance

    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        if request.url.path == "/api/v1/me/allowance":
            return httpx.Response(404, json={"error": {"code": "not_found", "message": "no route"}})
        if me_status != 200:
            return httpx.Response(me_status, json={"error": {"code": "unauthorized", "message": "bad token"}})
        return httpx.Response(200, json={"id": 1, "name": "a", "email": "a@x", "role": "participant",
                                         "submissions_today": 0, "daily_quota": 2})  # fmt: skip

    with client_for(handler) as client:
        if raised is None:
            assert _check_allowance(client, None) is None  # no track known: the CLI asks /evalsets/current
        else:
            with pytest.raises(raised):
                _check_allowance(client, None)
    assert seen == ["/api/v1/me/allowance", "/api/v1/me"]
