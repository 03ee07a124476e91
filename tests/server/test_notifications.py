"""Notifications (issue 32, item 5): webhooks for an evaluation's end and for alerts, generic JSON or Slack's body,
against real HTTP receivers on the loopback (one of them down): retried with backoff, never in the pipeline, never
carrying a hidden episode's text."""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker
from starlette.testclient import TestClient

from layersched.server import storage
from layersched.server.app import create_app
from layersched.server.db import make_engine, make_sessionmaker
from layersched.server.models import Evaluation, Notification, utcnow
from layersched.server.notifications import backoff, check_alerts, deliver_due, slack_text
from layersched.server.storage.queue_view import beat
from layersched.server.storage.webhooks import MAX_ATTEMPTS

from .conftest import Account, Captured, run_evaluation, submit
from .http_receiver import Receiver, http_receiver
from .test_browser import free_port

SECRET = "HIDDEN_WORKLOAD_7731"  # what an organiser-only message says of a hidden episode


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with http_receiver() as record:
        yield record


@pytest.fixture
def sessions(settings: Any) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(settings.database_url)
    yield make_sessionmaker(engine)
    engine.dispose()


def hook(client: Any, organiser: Account, url: str, **fields: Any) -> int:
    response = client.post("/api/v1/admin/webhooks", headers=organiser.headers, json={"url": url, **fields})
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def outbox(db: Session) -> list[Notification]:
    db.expire_all()
    return list(db.scalars(select(Notification).order_by(Notification.id)))


def test_an_evaluations_end_is_posted_as_json_and_as_slack_text_and_retried_where_the_receiver_is_down(
    client: Any, organiser: Account, alice: Account, db: Session, sessions: Any, receiver: Receiver
) -> None:
    down = f"http://127.0.0.1:{free_port()}/hook"  # nothing listens there
    hook(client, organiser, f"{receiver.url}/json", events=["evaluation"])
    hook(client, organiser, f"{receiver.url}/slack", format="slack", events=["evaluation"])
    hook(client, organiser, down, events=["evaluation"])
    hook(client, organiser, f"{receiver.url}/alerts", events=["alert"])  # takes no evaluation events

    scored = submit(client, alice, name="<!channel> & *me*").json()
    run_evaluation(db, scored["evaluations"][0]["id"], public=0.8123)
    failed = submit(client, alice, name="crashy").json()
    storage.start_evaluation(session=db, evaluation_id=failed["evaluations"][0]["id"], worker_id="w", total=1,
                             sim_version="1", image_digest=None, sandbox="process")  # fmt: skip
    storage.finish_evaluation(
        session=db,
        evaluation_id=failed["evaluations"][0]["id"],
        state="failed",
        error_category="crash",
        error_message=f"hub-20/e1: ValueError: {SECRET}",  # the organisers' message, of a hidden episode
        public_error_message="hub-20/e1: crash at step 7 (hidden episode: its details are shown to organisers only)",
    )
    # The pipeline's calls only wrote the outbox: nothing was posted yet.
    assert receiver.received == [] and len(outbox(db)) == 6

    http = httpx.Client()
    before = utcnow()
    assert deliver_due(sessions=sessions, http=http) == 4
    bodies = {path: [b for p, b in receiver.received if p == path] for path in ("/json", "/slack")}
    ok, crash = bodies["/json"]
    assert ok["event"] == "evaluation.succeeded" and ok["public_score"] == 0.8123
    assert ok["submission"] == {"id": scored["id"], "name": "<!channel> & *me*", "owner": "alice", "team": None,
                                "phase": "main"}  # fmt: skip
    assert crash["evaluation"] == {
        "id": failed["evaluations"][0]["id"], "kind": "initial", "state": "failed", "category": "crash",
        "service_failure": False,
        "message": "hub-20/e1: crash at step 7 (hidden episode: its details are shown to organisers only)",
    }  # fmt: skip
    assert bodies["/slack"][0] == {
        "text": f"Evaluation #{scored['evaluations'][0]['id']} (initial) of submission #{scored['id']} "
        "*&lt;!channel&gt; &amp; *me** by alice in phase main: *succeeded*, public score 0.8123"
    }
    assert bodies["/slack"][1]["text"].endswith(": *failed*, crash: hub-20/e1: crash at step 7 (hidden episode: its "
                                                "details are shown to organisers only)")  # fmt: skip
    assert SECRET not in json.dumps(receiver.received)

    stuck = [n for n in outbox(db) if n.delivered_at is None]
    assert len(stuck) == 2 and all(n.attempts == 1 and "ConnectError" in (n.last_error or "") for n in stuck)
    for notification in stuck:
        assert notification.next_attempt_at is not None
        wait = (notification.next_attempt_at - before).total_seconds()
        assert 8 <= wait <= 13  # 10 s, +-20%
    # Each later attempt waits twice as long, until the notification is given up.
    moment = utcnow()
    for attempt in range(2, MAX_ATTEMPTS + 1):
        moment += backoff(attempt, jitter=0.2) + dt.timedelta(seconds=1)
        deliver_due(sessions=sessions, http=http, now=moment)
    given_up = [n for n in outbox(db) if n.delivered_at is None]
    assert all(n.attempts == MAX_ATTEMPTS and n.failed_at is not None and n.next_attempt_at is None for n in given_up)
    http.close()

    listed = client.get("/api/v1/admin/webhooks", headers=organiser.headers).json()["data"]
    assert [(w["pending"], w["delivered"], w["failed"]) for w in listed] == [(0, 2, 0), (0, 2, 0), (0, 0, 2), (0, 0, 0)]
    assert "ConnectError" in listed[2]["last_error"]


def test_a_receiver_that_fails_is_tried_again(
    client: Any, organiser: Account, alice: Account, db: Session, sessions: Any, receiver: Receiver
) -> None:
    hook(client, organiser, receiver.url, events=["evaluation"])
    receiver.status = 500
    run_evaluation(db, submit(client, alice).json()["evaluations"][0]["id"])
    http = httpx.Client()
    assert deliver_due(sessions=sessions, http=http) == 0
    (notification,) = outbox(db)
    assert (notification.attempts, notification.last_error) == (1, "HTTP 500: ")
    receiver.status = 200
    assert notification.next_attempt_at is not None
    assert deliver_due(sessions=sessions, http=http, now=notification.next_attempt_at) == 1
    assert len(receiver.received) == 2 and outbox(db)[0].delivered_at is not None
    http.close()


def test_backoff_doubles_to_an_hour() -> None:
    assert [backoff(n, jitter=0).total_seconds() for n in (1, 2, 3, 9, 20)] == [10, 20, 40, 2560, 3600]


def test_slack_text_is_escaped_and_bounded() -> None:
    assert slack_text("<@U123> & <!here>\x1b[2J") == "&lt;@U123&gt; &amp; &lt;!here&gt;[2J"
    assert slack_text("x" * 500).endswith("x…") and len(slack_text("x" * 500)) == 300


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"url": "ftp://example.org/x"}, "'ftp://example.org/x' is not an http(s) URL with a host: a webhook must be "
         "one (e.g. https://...)"),
        ({"url": "hooks.slack.com/x"}, "'hooks.slack.com/x' is not an http(s) URL with a host"),
        ({"url": "https://x.org", "events": []}, "events: List should have at least 1 item after validation"),
        ({"url": "https://x.org", "format": "xml"}, "format: Input should be 'json' or 'slack'"),
    ],
    ids=["ftp", "no-scheme", "no-events", "format"],
)  # fmt: skip
def test_a_bad_webhook_is_named(client: Any, organiser: Account, body: dict[str, Any], message: str) -> None:
    response = client.post("/api/v1/admin/webhooks", headers=organiser.headers, json=body)
    assert response.status_code == 422 and message in response.json()["error"]["message"]
    assert client.get("/api/v1/admin/webhooks", headers=organiser.headers).json()["count"] == 0


def test_alerts_fire_once_repeat_and_resolve(
    client: Any, organiser: Account, alice: Account, db: Session, settings: Any
) -> None:
    settings.daily_quota = 20  # the failure rate needs a few evaluations
    hook(client, organiser, "https://alerts.example/hook", events=["alert"])
    assert check_alerts(session=db, settings=settings) == []  # nothing wrong yet
    now = utcnow()
    beat(session=db, worker_id="host:1", now=now)
    queued = submit(client, alice).json()["evaluations"][0]["id"]
    db.execute(update(Evaluation).where(Evaluation.id == queued).values(created_at=now - dt.timedelta(hours=1)))
    db.commit()
    assert check_alerts(session=db, settings=settings, now=now) == ["alert.queue_wait:firing"]
    assert check_alerts(session=db, settings=settings, now=now + dt.timedelta(minutes=1)) == []  # sent already
    # An hour on, the alert holds still and is sent again; the worker's heartbeat is an hour old: none is alive.
    later = now + dt.timedelta(seconds=settings.alert_repeat_s + 1)
    assert sorted(check_alerts(session=db, settings=settings, now=later)) == [
        "alert.no_worker:firing", "alert.queue_wait:firing",
    ]  # fmt: skip
    run_evaluation(db, queued, fail=("infrastructure", "lost"), infrastructure=True)
    beat(session=db, worker_id="host:1", now=later)
    assert sorted(check_alerts(session=db, settings=settings, now=later)) == [
        "alert.no_worker:resolved", "alert.queue_wait:resolved",
    ]  # fmt: skip
    for _ in range(settings.alert_min_ended - 1):
        run_evaluation(db, submit_and_id(client, alice, db))
    assert check_alerts(session=db, settings=settings) == []  # 1 of 5 (20%) is not over the bound
    evaluation = submit_and_id(client, alice, db)
    run_evaluation(db, evaluation, fail=("infrastructure", "lost"), infrastructure=True)
    assert check_alerts(session=db, settings=settings) == ["alert.infrastructure_failures:firing"]
    (notification,) = [n for n in outbox(db) if n.event == "alert.infrastructure_failures"]
    assert notification.payload["message"] == (
        "2 of the 6 evaluations that ended in the last 3600 s failed through the service (33%, bound 20%)"
    )


def submit_and_id(client: Any, account: Account, db: Session) -> int:
    body = submit(client, account).json()
    return int(body["evaluations"][0]["id"])


def test_the_notifier_of_the_app_delivers_a_test_notification(
    settings: Any, enqueued: Captured, organiser: Account, receiver: Receiver
) -> None:
    settings.notify_interval_s = 0.2
    with TestClient(create_app(settings, enqueuer=enqueued)) as client:
        webhook = hook(client, organiser, receiver.url, format="slack")
        response = client.post(f"/api/v1/admin/webhooks/{webhook}/test", headers=organiser.headers)
        assert response.status_code == 202 and response.json()["pending"] == 1
        deadline = time.monotonic() + 30
        while not receiver.received:
            assert time.monotonic() < deadline, "the notifier did not deliver the test notification"
            time.sleep(0.1)
        assert receiver.received == [("/", {"text": "a test notification from layersched"})]
        assert client.delete(f"/api/v1/admin/webhooks/{webhook}", headers=organiser.headers).status_code == 204
        for method, path in (("delete", f"/{webhook}"), ("post", f"/{webhook}/test")):
            gone = client.request(method, f"/api/v1/admin/webhooks{path}", headers=organiser.headers)
            assert gone.status_code == 404 and gone.json()["error"]["message"] == f"webhook {webhook} does not exist"
