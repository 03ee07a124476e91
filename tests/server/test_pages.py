"""The HTML pages through the app (the browser test drives them in Chromium): statuses, escaping, visibility."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from layersched.server import storage

from .conftest import Account, run_evaluation, score, submit


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


def test_empty_leaderboard_page(client: Any) -> None:
    response = client.get("/")
    assert response.status_code == 200 and "No scored submissions yet." in response.text


def test_private_page_until_published(client: Any, organiser: Account) -> None:
    response = client.get("/?split=private")
    assert response.status_code == 403 and "the private leaderboard is not published yet" in response.text
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
    hidden = client.get(f"/submissions/{queued['id']}")
    assert hidden.status_code == 404 and f"submission {queued['id']} does not exist" in hidden.text
    assert client.get(f"/submissions/{queued['id']}", headers=alice.headers).status_code == 200
