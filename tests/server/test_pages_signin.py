"""Signing in to the pages with a token, and what a signed-in reader sees: every own submission with its per-episode
log (a hidden episode as the API's logs show it), others' unranked ones refused without saying whether they exist."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.orm import Session
from starlette.testclient import TestClient

from layersched.server import storage, visibility
from layersched.server.app import create_app
from layersched.server.routes import page_auth

from .conftest import Account, run_evaluation, submit
from .test_browser import uvicorn_server

SECRET = "SECRET_WORKLOAD_4242"  # what a policy wrote about a hidden episode: organisers only


def sign_in(client: Any, account: Account, next_url: str = "/submissions") -> Any:
    return client.post("/signin", data={"token": account.token, "next": next_url}, follow_redirects=False)


def fail_on_hidden_episode(db: Session, evaluation_id: int) -> None:
    """The worker's record of an evaluation whose hidden episode crashed at step 7 quoting its workload, after a
    public one that passed and printed (``run_evaluation``'s two episodes, rewritten so)."""
    run_evaluation(db, evaluation_id, fail=("crash", "hub-20/e1: " + visibility.hidden_episode_message("crash", 7)))
    episodes: list[dict[str, Any]] = [
        {"scenario": "lab-5", "episode_id": "e0", "hidden": False, "status": "ok", "stdout": "public <b>output</b>"},
        {"scenario": "hub-20", "episode_id": "e1", "hidden": True, "status": "crash", "step": 7,
         "message": f"ValueError: task size {SECRET}", "stdout": f"printed {SECRET}"},
    ]  # fmt: skip
    for episode in episodes:
        storage.record_episode_result(session=db, evaluation_id=evaluation_id, split="public", **episode)


def episode_rows(page: str) -> list[list[str]]:
    """The episode log table's cells as text (tags dropped, entities decoded), row by row."""
    start = page.index('<table id="episodes">')
    table = page[start : page.index("</table>", start)]
    rows = re.findall(r"<tr class=\"(?:hidden|public)\">(.*?)</tr>", table, flags=re.S)
    return [
        [
            html.unescape(" ".join(re.sub(r"<[^>]+>", " ", c).split()))
            for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)
        ]
        for r in rows
    ]


def test_the_owner_signs_in_and_sees_every_own_submission(client: Any, alice: Account, db: Session) -> None:
    queued = submit(client, alice, name="still queued").json()
    failed = submit(client, alice, name="it failed").json()
    fail_on_hidden_episode(db, failed["evaluations"][0]["id"])
    response = sign_in(client, alice, next_url=f"/submissions/{queued['id']}")
    assert response.status_code == 303 and response.headers["location"] == f"/submissions/{queued['id']}"
    page = client.get(f"/submissions/{queued['id']}")
    assert page.status_code == 200 and 'id="state">queued<' in page.text and "Signed in as <strong>alice" in page.text
    assert page.headers["cache-control"] == "private, no-store"
    page = client.get(f"/submissions/{failed['id']}")
    assert page.status_code == 200 and '<span class="badge">crash</span>' in page.text
    listing = client.get("/submissions")
    assert listing.status_code == 200 and "2 in all." in listing.text
    assert f'href="/submissions/{queued["id"]}">still queued</a>' in listing.text
    assert f'href="/submissions/{failed["id"]}">it failed</a>' in listing.text


def test_the_episode_log_shows_a_hidden_episode_as_the_api_does(
    client: Any, alice: Account, organiser: Account, db: Session
) -> None:
    failed = submit(client, alice).json()
    fail_on_hidden_episode(db, failed["evaluations"][0]["id"])
    sign_in(client, alice)
    page = client.get(f"/submissions/{failed['id']}").text
    assert SECRET not in page
    api = client.get(f"/api/v1/submissions/{failed['id']}/logs", headers=alice.headers).json()["data"]
    expected = [
        [
            e["scenario"],
            e["episode"] + (" hidden" if e["hidden"] else ""),
            e["status"],
            str(e["step"] or ""),
            " ".join(" ".join(filter(None, [e["message"], e["stdout"] and f"stdout {e['stdout']}"])).split()),
        ]
        for e in api
    ]
    assert episode_rows(page) == expected
    assert ["hub-20", "e1 hidden", "crash", "7", visibility.hidden_episode_message("crash", 7)] in expected
    assert "public &lt;b&gt;output&lt;/b&gt;" in page  # a public episode's output, escaped
    organiser_page = client.get(f"/submissions/{failed['id']}", headers=organiser.headers).text
    assert f"ValueError: task size {SECRET}" in organiser_page


def test_the_sign_in_cookie(settings: Any, enqueued: Any, alice: Account) -> None:
    for base, secure in (("http://testserver", False), ("https://testserver", True)):
        with TestClient(create_app(settings, enqueuer=enqueued), base_url=base) as c:
            response = sign_in(c, alice)
            assert response.status_code == 303
            cookie = response.headers["set-cookie"]
            attributes = {a.strip().split("=")[0].lower() for a in cookie.split(";")[1:]}
            assert {"httponly", "path", "max-age"} <= attributes and "samesite=strict" in cookie.lower()
            assert ("secure" in attributes) is secure, cookie
            value = cookie.split(";")[0].split("=", 1)[1]
            assert alice.token not in value and alice.token.split("_", 2)[2] not in value
            token = alice.user.tokens[0]
            assert token.token_sha256 not in value


def test_sign_out(client: Any, alice: Account) -> None:
    queued = submit(client, alice).json()
    sign_in(client, alice)
    assert client.get(f"/submissions/{queued['id']}").status_code == 200
    response = client.post("/signout", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/"
    assert 'layersched_session=""' in response.headers["set-cookie"] and "Max-Age=0" in response.headers["set-cookie"]
    after = client.get(f"/submissions/{queued['id']}")
    assert after.status_code == 401 and 'action="/signin"' in after.text


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("", "no token was given: paste the token an organiser gave you (it starts with &#39;lst_&#39;)"),
        ("hunter2", "that is not a layersched token (7 characters, not starting with &#39;lst_&#39;)"),
        ("lst_0123456789abcdef_" + "x" * 43, "that token (64 characters) is unknown or revoked: ask an organiser"),
    ],
    ids=["empty", "not-a-token", "unknown"],
)
def test_a_wrong_token_is_a_clear_error(client: Any, alice: Account, token: str, message: str) -> None:
    response = client.post("/signin", data={"token": token, "next": "/submissions"}, follow_redirects=False)
    assert response.status_code == 401 and message in response.text
    assert "set-cookie" not in response.headers
    if token:
        assert token not in response.text  # never repeated back


def test_a_revoked_token_ends_its_sessions(client: Any, alice: Account, organiser: Account, db: Session) -> None:
    queued = submit(client, alice).json()
    sign_in(client, alice)
    assert client.get(f"/submissions/{queued['id']}").status_code == 200
    storage.revoke_token(session=db, token_id=alice.user.tokens[0].id)
    assert client.get(f"/submissions/{queued['id']}").status_code == 401
    response = sign_in(client, alice)
    assert response.status_code == 401 and "unknown or revoked" in response.text


def test_a_forged_or_expired_cookie_signs_nobody_in(alice: Account, db: Session) -> None:
    signed = page_auth.sign_in(session=db, plain_token=alice.token, now=1_000_000)
    assert signed is not None
    user, cookie = signed
    assert user.id == alice.user.id
    assert page_auth.session_user(session=db, cookie=cookie, now=1_000_000 + 60).id == alice.user.id
    expires_at = 1_000_000 + page_auth.SESSION_SECONDS
    assert page_auth.session_user(session=db, cookie=cookie, now=expires_at + 1) is None
    version, token_id, expires, mac = cookie.split(".")
    forged = [
        f"{version}.{token_id}.{int(expires) + 10**6}.{mac}",  # a later expiry
        f"{version}.{int(token_id) + 1}.{expires}.{mac}",  # another token
        f"{version}.{token_id}.{expires}.{'0' * len(mac)}",
        f"s0.{token_id}.{expires}.{mac}",
        f"{version}.{token_id}.{expires}",
        f"{version}.99999999999.{expires}.{mac}",
        "",
    ]
    for value in forged:
        assert page_auth.session_user(session=db, cookie=value, now=1_000_000) is None, value


def masked(page: str, submission_id: int) -> str:
    return page.replace(f"ubmission {submission_id}", "ubmission N").replace(f"/submissions/{submission_id}", "/N")


def test_no_page_tells_whether_an_unshown_submission_exists(
    client: Any, alice: Account, bob: Account, organiser: Account, db: Session
) -> None:
    mine = submit(client, alice).json()["id"]
    missing = mine + 1000
    anonymous = {i: client.get(f"/submissions/{i}") for i in (mine, missing)}
    for i, response in anonymous.items():
        assert response.status_code == 401 and "does not exist" not in response.text
        assert f'name="next" value="/submissions/{i}"' in response.text
    assert masked(anonymous[mine].text, mine) == masked(anonymous[missing].text, missing)
    others = {i: client.get(f"/submissions/{i}", headers=bob.headers) for i in (mine, missing)}
    for i, response in others.items():
        assert response.status_code == 403
        assert f"submission {i} is not one of yours (signed in as bob)" in response.text
    assert masked(others[mine].text, mine) == masked(others[missing].text, missing)
    assert client.get(f"/submissions/{mine}", headers=organiser.headers).status_code == 200
    gone = client.get(f"/submissions/{missing}", headers=organiser.headers)
    assert gone.status_code == 404 and f"submission {missing} does not exist" in gone.text


def test_the_organiser_signed_in_sees_everyones_submissions(client: Any, alice: Account, organiser: Account) -> None:
    first = submit(client, alice, name="alice's").json()
    sign_in(client, organiser)
    listing = client.get("/submissions")
    assert "All submissions" in listing.text and "<td>alice</td>" in listing.text
    assert client.get(f"/submissions/{first['id']}").status_code == 200


@pytest.mark.parametrize(
    "next_url", ["//evil.example/x", "https://evil.example/", "/\\evil.example", ""], ids=["//", "https", "\\", "empty"]
)
def test_sign_in_goes_nowhere_off_site(client: Any, alice: Account, next_url: str) -> None:
    response = sign_in(client, alice, next_url=next_url)
    assert response.status_code == 303 and response.headers["location"] == "/submissions"


def test_another_site_cannot_sign_a_browser_in_or_out(client: Any, alice: Account) -> None:
    headers = {"Origin": "https://evil.example"}
    response = client.post("/signin", data={"token": alice.token}, headers=headers, follow_redirects=False)
    assert response.status_code == 403 and "set-cookie" not in response.headers
    assert "sign-in from &#39;https://evil.example&#39; is refused: this site is &#39;http://testserver&#39;" in (
        response.text
    )
    sign_in(client, alice)
    response = client.post("/signout", headers=headers, follow_redirects=False)
    assert response.status_code == 403 and "set-cookie" not in response.headers
    same = client.post("/signout", headers={"Origin": "http://testserver"}, follow_redirects=False)
    assert same.status_code == 303


def test_pages_run_no_script(client: Any, alice: Account) -> None:
    for path in ("/", "/signin", "/submissions"):
        response = client.get(path)
        directives = dict(d.strip().split(" ", 1) for d in response.headers["content-security-policy"].split(";"))
        assert directives["default-src"] == "'none'" and "script-src" not in directives, path
        assert "<script" not in response.text


def test_a_running_evaluation_shows_no_hidden_episode_yet(client: Any, alice: Account, db: Session) -> None:
    running = submit(client, alice).json()
    evaluation_id = running["evaluations"][0]["id"]
    storage.start_evaluation(
        session=db, evaluation_id=evaluation_id, worker_id="w1", total=2, sim_version="1.0.0", image_digest=None,
        sandbox="process",
    )  # fmt: skip
    for scenario, hidden in (("hub-20", True), ("lab-5", False)):
        storage.record_episode_result(
            session=db, evaluation_id=evaluation_id, scenario=scenario, episode_id="e0", split="public",
            hidden=hidden, status="ok",
        )  # fmt: skip
    sign_in(client, alice)
    page = client.get(f"/submissions/{running['id']}").text
    # When each hidden row appeared would tell how long the policy took on it: like the API, none until the end.
    assert [row[0] for row in episode_rows(page)] == ["lab-5"]
    api = client.get(f"/api/v1/submissions/{running['id']}/logs", headers=alice.headers).json()["data"]
    assert [e["scenario"] for e in api] == ["lab-5"]


MALFORMED_COOKIES = {
    "superscript id": b"s1.\xb2.9999999999.00",  # headers are latin-1: '\xb2' is '²', which str.isdigit() accepts
    "superscript expiry": b"s1.1.\xb9\xb2\xb3.00",
    "non-ASCII MAC": b"s1.1.9999999999.\xe9",  # hmac.compare_digest takes ASCII strings only
    "5000-digit id": b"s1." + b"9" * 5000 + b".9999999999.00",  # past int()'s digit limit
    "leading zero": b"s1.01.9999999999." + b"0" * 64,
    "upper-case MAC": b"s1.1.9999999999." + b"A" * 64,
}


def test_a_malformed_cookie_reads_as_nobody_signed_in(database_url: str, alice: Account, tmp_path: Path) -> None:
    # A real uvicorn: the test client re-encodes header bytes as UTF-8, so '\xb2' would not arrive as sent.
    with uvicorn_server(database_url, tmp_path) as base:
        for name, raw in MALFORMED_COOKIES.items():
            for path, status in (("/", 200), ("/signin", 200), ("/submissions", 401)):
                response = httpx.get(base + path, headers={"Cookie": b"layersched_session=" + raw})
                assert response.status_code == status, (name, path, response.text[:80])


def test_a_too_long_token_is_not_repeated_back(client: Any) -> None:
    token = "lst_" + "a" * 197
    response = client.post("/signin", data={"token": token, "next": "/submissions"}, follow_redirects=False)
    assert response.status_code == 422 and response.headers["content-type"].startswith("text/html")
    assert "that is not a layersched token (201 characters; a token has at most 200)" in response.text
    assert "a" * 20 not in response.text and "set-cookie" not in response.headers


def test_an_ok_hidden_episode_shows_no_message(client: Any, alice: Account, organiser: Account, db: Session) -> None:
    finished = submit(client, alice).json()
    evaluation_id = finished["evaluations"][0]["id"]
    run_evaluation(db, evaluation_id)
    storage.record_episode_result(
        session=db, evaluation_id=evaluation_id, scenario="hub-20", episode_id="e9", split="public", hidden=True,
        status="ok", step=40, message=f"warning: task size {SECRET}", stdout=f"printed {SECRET}",
    )  # fmt: skip
    logs = f"/api/v1/submissions/{finished['id']}/logs"
    api = client.get(logs, headers=alice.headers).json()["data"]
    hidden = [e for e in api if e["hidden"]]
    assert hidden and all(e["message"] == "" and e["stdout"] is None and e["stderr"] is None for e in hidden), hidden
    assert SECRET not in client.get(f"/submissions/{finished['id']}", headers=alice.headers).text
    assert SECRET in client.get(logs, headers=organiser.headers).text


def test_behind_a_tls_proxy_the_public_url_is_the_site(settings: Any, enqueued: Any, alice: Account) -> None:
    # What uvicorn passes on from a proxy it does not trust: plain http and the proxy's Host, Origin https.
    public = settings.model_copy(update={"public_url": "https://layersched.example.org"})
    with TestClient(create_app(public, enqueuer=enqueued), base_url="http://layersched.example.org") as c:
        origin = {"Origin": "https://layersched.example.org"}
        response = c.post("/signin", data={"token": alice.token}, headers=origin, follow_redirects=False)
        assert response.status_code == 303, response.text[-400:]
        assert "; secure" in response.headers["set-cookie"].lower()
        signout = c.post("/signout", headers=origin, follow_redirects=False)
        assert signout.status_code == 303 and "; secure" in signout.headers["set-cookie"].lower()
        other = c.post("/signin", data={"token": alice.token}, headers={"Origin": "http://layersched.example.org"})
        assert other.status_code == 403 and "this site is &#39;https://layersched.example.org&#39;" in other.text


def test_pages_say_nosniff(client: Any) -> None:
    for path in ("/", "/signin", "/submissions", "/submissions/1"):
        assert client.get(path).headers["x-content-type-options"] == "nosniff", path


def test_sign_out_ends_the_session_on_the_server(client: Any, alice: Account) -> None:
    queued = submit(client, alice).json()
    page = f"/submissions/{queued['id']}"
    saved = sign_in(client, alice).headers["set-cookie"].split(";")[0]  # a copy kept elsewhere
    assert client.post("/signout", follow_redirects=False).status_code == 303
    assert client.get(page, headers={"Cookie": saved}).status_code == 401
    assert sign_in(client, alice).status_code == 303  # signing in again at once works
    assert client.get(page).status_code == 200
    assert client.get(page, headers={"Cookie": saved}).status_code == 401
