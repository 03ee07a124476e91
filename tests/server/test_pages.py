"""The HTML pages through the app (the browser test drives them in Chromium): statuses, escaping, visibility."""

from __future__ import annotations

import html as html_lib
import re
from typing import Any

import pytest
from sqlalchemy.orm import Session

from layersched.server import storage

from . import stand_in_track
from .conftest import Account, register_stand_in_set, run_evaluation, score, submit


def test_leaderboard_page(client: Any, alice: Account, db: Session) -> None:
    body = submit(client, alice, name="<b>bold</b>").json()
    run_evaluation(db, body["evaluations"][0]["id"], public=0.9)
    for version, value in (("0.9.0", 1.3), ("1.0.0", 1.0)):  # only the newest row of a baseline is shown
        storage.upsert_baseline_result(
            session=db,
            evalset_commitment="c" * 64,
            sim_version=version,
            baseline="Greedy",
            score_public=score(value),
            score_private=None,
        )
    response = client.get("/")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    html = response.text
    assert "&lt;b&gt;bold&lt;/b&gt;" in html and "<b>bold</b>" not in html
    assert html.count('<circle class="point"') == 2
    assert "baseline Greedy (sim 1.0.0)" in html and "sim 0.9.0" not in html
    assert "<script" not in html


def test_a_teams_row_shows_its_name_and_members(client: Any, alice: Account, bob: Account, db: Session) -> None:
    assert client.post("/api/v1/teams", headers=alice.headers, json={"name": "ants"}).status_code == 201
    code = client.post("/api/v1/teams/mine/invites", headers=alice.headers).json()["code"]
    assert client.post("/api/v1/teams/join", headers=bob.headers, json={"code": code}).status_code == 200
    body = submit(client, bob).json()
    run_evaluation(db, body["evaluations"][0]["id"], public=0.9)
    row = re.search(r"<td class=\"num\">1</td>\s*<td>(.*?)</td>", client.get("/").text, re.S)
    assert row is not None and row.group(1) == 'ants <span class="members">(alice, bob)</span>'
    # bob's submission page is alice's to read whole, as a member's.
    assert client.post("/signin", data={"token": alice.token}, follow_redirects=False).status_code == 303
    page = client.get(f"/submissions/{body['id']}")
    assert page.status_code == 200 and '<table id="episodes">' in page.text


def test_the_layers_board_reads_as_before_and_names_its_track(client: Any, alice: Account, db: Session) -> None:
    body = submit(client, alice).json()
    run_evaluation(db, body["evaluations"][0]["id"], public=0.9)
    html = client.get("/").text
    assert '<p id="track">Track <strong>Layer-aware container placement</strong> (<code>layers-v1</code>).</p>' in html
    assert "Score (ratio to Greedy, lower is better)" in html and ">Greedy = 1</text>" in html
    assert "per-scenario ratios to Greedy on the same episodes" in html and "1.0 is Greedy's level" in html
    assert "Ratio to Greedy per scenario (green: better than Greedy, red: worse)." in html
    owner = client.get(f"/submissions/{body['id']}", headers=alice.headers).text
    assert "<th>Ratio to Greedy</th>" in owner and ">Greedy = 1</text>" in owner


def test_a_board_on_another_track_names_its_reference_and_never_greedy(
    client: Any, alice: Account, db: Session
) -> None:
    register_stand_in_set(db)
    body = submit(client, alice, stand_in_track.POLICY).json()  # evaluated on the current set: the stand-in track's
    run_evaluation(db, body["evaluations"][0]["id"], public=0.9)
    pages = {
        "board": client.get("/").text,
        "public entry": client.get(f"/submissions/{body['id']}").text,
        "owner": client.get(f"/submissions/{body['id']}", headers=alice.headers).text,
    }
    for name, html in pages.items():
        assert "greedy" not in html.lower(), name  # not in a text, a title nor a CSS class
        assert ">FirstFit = 1</text>" in html and "Score (ratio to FirstFit, lower is better)" in html, name
    board = pages["board"]
    assert '<p id="track">Track <strong>Stand-in bin packing</strong> (<code>standin-v1</code>).</p>' in board
    assert "per-scenario ratios to FirstFit on the same episodes" in board and "1.0 is FirstFit's level" in board
    assert "Ratio to FirstFit per scenario (green: better than FirstFit, red: worse)." in board
    assert "<th>Ratio to FirstFit</th>" in pages["owner"] and "<th>Ratio to FirstFit</th>" in pages["public entry"]


def test_the_owner_reads_the_ratios_of_the_set_that_scored_them(client: Any, alice: Account, db: Session) -> None:
    body = submit(client, alice).json()
    run_evaluation(db, body["evaluations"][0]["id"], public=0.9)  # on the sample set: layers-v1
    register_stand_in_set(db)  # the board moves to another track; the owner's score is still the sample set's
    owner = client.get(f"/submissions/{body['id']}", headers=alice.headers).text
    assert "<th>Ratio to Greedy</th>" in owner


def test_empty_leaderboard_page(client: Any, evalset: Any) -> None:
    response = client.get("/")
    assert response.status_code == 200 and "No scored submissions yet." in response.text


def test_leaderboard_page_before_any_phase(client: Any) -> None:
    response = client.get("/")
    assert response.status_code == 200 and "no phase exists yet" in response.text


def test_private_page_until_published(client: Any, organiser: Account) -> None:
    response = client.get("/?split=private")
    assert response.status_code == 403
    assert "the private leaderboard of phase &#39;main&#39; is not published yet" in response.text
    client.post("/api/v1/admin/leaderboard/publish", headers=organiser.headers)
    assert client.get("/?split=private").status_code == 200


def test_submission_page_visibility(client: Any, alice: Account, db: Session) -> None:
    ranked = submit(client, alice, name="ranked", description="my secret idea").json()
    run_evaluation(db, ranked["evaluations"][0]["id"], public=0.9)
    queued = submit(client, alice, name="queued").json()
    public = client.get(f"/submissions/{ranked['id']}")
    assert public.status_code == 200 and "ranked" in public.text
    assert "my secret idea" not in public.text and 'id="evaluations"' not in public.text
    owner = client.get(f"/submissions/{ranked['id']}", headers=alice.headers)
    assert "my secret idea" in owner.text and 'id="evaluations"' in owner.text
    hidden = client.get(f"/submissions/{queued['id']}")  # unranked: its owner signs in to see it
    assert hidden.status_code == 401 and 'action="/signin"' in hidden.text and "does not exist" not in hidden.text
    assert client.get(f"/submissions/{queued['id']}", headers=alice.headers).status_code == 200


def test_anonymous_visitors_see_no_error_of_a_ranked_submission(
    client: Any, alice: Account, organiser: Account, db: Session
) -> None:
    ranked = submit(client, alice, name="ranked").json()
    run_evaluation(db, ranked["evaluations"][0]["id"], public=0.9)
    rerun = client.post(f"/api/v1/admin/submissions/{ranked['id']}/rerun", headers=organiser.headers).json()
    run_evaluation(db, rerun["id"], fail=("import_error", "ModuleNotFoundError: No module named 'secret_helper'"))
    anonymous = client.get(f"/submissions/{ranked['id']}")
    assert anonymous.status_code == 200 and "rank <strong>1</strong>" in anonymous.text
    assert "secret_helper" not in anonymous.text and "import_error" not in anonymous.text
    owner = client.get(f"/submissions/{ranked['id']}", headers=alice.headers)
    assert '<span class="badge">import_error</span>' in owner.text


def test_the_owner_page_shows_the_laddered_score(
    settings: Any, enqueued: Any, alice: Account, organiser: Account, db: Session
) -> None:
    from starlette.testclient import TestClient

    from layersched.server.app import create_app

    with TestClient(create_app(settings.model_copy(update={"public_ladder_step": 0.05}), enqueuer=enqueued)) as c:
        for name, value in (("first", 0.95), ("lucky", 0.93)):
            body = submit(c, alice, name=name).json()
            run_evaluation(db, body["evaluations"][0]["id"], public=value)
        lucky = body["id"]
        owner = c.get(f"/submissions/{lucky}", headers=alice.headers).text
        assert "<p>0.9500 [0.9300, 0.9700]</p>" in owner and "0.9300 [" not in owner  # score [interval]
        assert "0.911" not in owner  # nor its per-scenario ratios (0.93 * 0.98)
        assert "did not beat your best shown public score" in owner
        assert "<p>0.9300 [0.9100, 0.9500]</p>" in c.get(f"/submissions/{lucky}", headers=organiser.headers).text


@pytest.mark.parametrize("path", ["/docs", "/redoc"], ids=["swagger", "redoc"])
def test_api_docs_load_everything_from_this_host(client: Any, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    directives = dict(d.strip().split(" ", 1) for d in response.headers["content-security-policy"].split(";"))
    assert directives["default-src"] == "'none'" and directives["script-src"] == "'self'"
    assert all(f"{d}-src" in directives for d in ("style", "img", "connect", "font"))
    scripts = re.findall(r"<script([^>]*)>", response.text)
    assert scripts and all(re.search(r' src="/static/[^"]+"', attrs) for attrs in scripts), "an inline script"
    urls = re.findall(r'(?:src|href)="([^"]*)"', response.text)
    assert urls and all(url.startswith("/static/") for url in urls), urls
    for url in urls:
        asset = client.get(url)
        assert asset.status_code == 200 and asset.content, url


def test_a_ranked_entry_shows_others_only_what_its_leaderboard_row_carries(
    client: Any, alice: Account, bob: Account, organiser: Account, db: Session
) -> None:
    ranked = submit(client, alice, name="ranked").json()
    run_evaluation(db, ranked["evaluations"][0]["id"], public=0.9)
    admin = "/api/v1/admin"
    assert client.post(f"{admin}/leaderboard/freeze", json={"frozen": True}, headers=organiser.headers).is_success
    reason = "plagiarism: copied from carol's repo"
    disqualify = f"{admin}/submissions/{ranked['id']}/disqualify"
    assert client.post(disqualify, json={"reason": reason}, headers=organiser.headers).is_success
    rerun = client.post(f"{admin}/submissions/{ranked['id']}/rerun", headers=organiser.headers).json()
    storage.start_evaluation(
        session=db, evaluation_id=rerun["id"], worker_id="w2", total=3, sim_version="1.0.0", image_digest=None,
        sandbox="process",
    )  # fmt: skip
    for reader in ({}, bob.headers):
        page = client.get(f"/submissions/{ranked['id']}", headers=reader)
        assert page.status_code == 200 and "rank <strong>1</strong>" in page.text  # the frozen board's snapshot
        assert "<p>0.9000 [0.8800, 0.9200]</p>" in page.text
        assert "carol" not in page.text and "Disqualified" not in page.text
        assert "running" not in page.text and "/3 episodes" not in page.text and 'id="state"' not in page.text
    owner = client.get(f"/submissions/{ranked['id']}", headers=alice.headers).text
    assert "Disqualified: plagiarism: copied from carol&#39;s repo" in owner and 'id="state">running<' in owner


IMPORT_FAILURE = (
    "lab-5/e0: policy import failed in this episode's process:\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.11/dist-packages/layersched/worker/sandbox/episode_process.py", line 108, in '
    "import_policy\n"
    "    spec.loader.exec_module(module)\n"
    '  File "<frozen importlib._bootstrap_external>", line 940, in exec_module\n'
    '  File "<frozen importlib._bootstrap>", line 241, in _call_with_frames_removed\n'
    '  File "/bundle/policy.py", line 2, in <module>\n'
    "    from helpers import load\n"
    '  File "/bundle/helpers.py", line 1, in <module>\n'
    "    import gymnasium\n"
    "ModuleNotFoundError: No module named 'gymnasium'"
)


def test_a_failed_submissions_page_shows_the_traceback_once_from_the_policys_own_frames(
    client: Any, alice: Account, db: Session
) -> None:
    """Issue 29: the sandbox's whole traceback reached the page twice (the error and the episode's row), with the
    episode process's and importlib's frames; the student needs their own files' frames and the exception."""
    evaluation_id = submit(client, alice).json()["evaluations"][0]["id"]
    storage.start_evaluation(
        session=db, evaluation_id=evaluation_id, worker_id="w1", total=2, sim_version="1.0.0",
        image_digest="sha256:" + "ab" * 32, sandbox="docker",
    )  # fmt: skip
    storage.record_episode_result(
        session=db, evaluation_id=evaluation_id, scenario="lab-5", episode_id="e0", split="public", hidden=False,
        status="import_error", message=IMPORT_FAILURE.split(": ", 1)[1], metrics=None, primary_value=None,
        trace_hash="", n_actions=0, stdout="", stderr="",
    )  # fmt: skip
    storage.finish_evaluation(
        session=db, evaluation_id=evaluation_id, state="failed", error_category="import_error",
        error_message=IMPORT_FAILURE, public_error_message=IMPORT_FAILURE, infrastructure_failure=False,
    )  # fmt: skip
    html = client.get("/submissions/1", headers=alice.headers).text
    assert html.count("Traceback (most recent call last)") == 1
    traceback = re.search(r'<pre id="traceback">(.*?)</pre>', html, re.S)
    assert traceback is not None
    assert html_lib.unescape(traceback.group(1)).splitlines() == [
        "Traceback (most recent call last):",
        '  File "/bundle/policy.py", line 2, in <module>',
        "    from helpers import load",
        '  File "/bundle/helpers.py", line 1, in <module>',
        "    import gymnasium",
        "ModuleNotFoundError: No module named 'gymnasium'",
    ]
    assert "episode_process.py" not in html and "frozen importlib" not in html
    summary = re.search(r'<span id="error">(.*?)</span>', html, re.S)
    assert summary is not None and html_lib.unescape(summary.group(1)) == (
        "lab-5/e0: policy import failed in this episode's process: ModuleNotFoundError: No module named 'gymnasium'"
    )


def test_per_scenario_columns_follow_the_sets_order(client: Any, alice: Account, db: Session) -> None:
    """The set lists lab-5 before hub-20 (conftest.SCENARIOS): both pages keep that order, not the alphabet's."""
    body = submit(client, alice).json()
    run_evaluation(db, body["evaluations"][0]["id"], public=0.9)
    board = client.get("/").text
    header = re.search(r'<table id="per-scenario">\s*<thead><tr>(.*?)</tr>', board, re.S)
    assert header is not None and re.findall(r"<th>([^<]*)</th>", header.group(1)) == ["Participant", "lab-5", "hub-20"]
    page = client.get(f"/submissions/{body['id']}", headers=alice.headers).text
    table = page.split('<table id="per-scenario">', 1)[1].split("</table>", 1)[0]
    assert re.findall(r"<tr><td>([^<]*)</td>", table) == ["lab-5", "hub-20"]
