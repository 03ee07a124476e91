"""A student sees where they are in the queue (issue 32, item 7): position, workers alive and an estimate from recent
run times, in the API (upload, read, list) and on the submission page; the workers' heartbeats behind it."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.models import Evaluation, WorkerHeartbeat, utcnow
from layersched.server.storage.queue_view import beat, forget_worker, workers_alive

from .conftest import Account, run_evaluation, submit


def finished_runs(db: Session, account: Account, client: Any, seconds: list[float]) -> None:
    """Evaluations that ran these many seconds each (recent run times to estimate from)."""
    for run in seconds:
        body = submit(client, account).json()
        evaluation_id = body["evaluations"][0]["id"]
        run_evaluation(db, evaluation_id)
        start = utcnow() - dt.timedelta(hours=1)
        db.execute(
            update(Evaluation)
            .where(Evaluation.id == evaluation_id)
            .values(started_at=start, finished_at=start + dt.timedelta(seconds=run))
        )
        db.commit()


@pytest.fixture
def roomy(settings: Any) -> Any:
    settings.daily_quota, settings.max_in_flight = 20, 3
    return settings


def test_place_and_estimate_from_recent_runs_and_workers_alive(
    client: Any, roomy: Any, alice: Account, bob: Account, db: Session
) -> None:
    finished_runs(db, alice, client, [50.0, 60.0, 70.0, 400.0])  # median 65 s
    beat(session=db, worker_id="host:1", now=utcnow())
    beat(session=db, worker_id="host:2", now=utcnow())
    beat(session=db, worker_id="gone:3", now=utcnow() - dt.timedelta(hours=1))  # stale: not alive
    first = submit(client, alice).json()
    second = submit(client, bob).json()
    third = submit(client, bob).json()
    assert first["queue"] == {"position": 1, "queued": 1, "workers": 2, "starts_in_s": 0.0, "done_in_s": 65.0}
    assert third["queue"]["position"] == 3

    read = client.get(f"/api/v1/submissions/{third['id']}", headers=bob.headers).json()
    # Two evaluations of 65 s ahead, shared by two workers: it starts in 65 s and is done 65 s later.
    assert read["queue"] == {"position": 3, "queued": 3, "workers": 2, "starts_in_s": 65.0, "done_in_s": 130.0}
    listed = client.get("/api/v1/submissions", headers=bob.headers).json()["data"]
    assert [s["queue"]["position"] for s in listed] == [3, 2]

    storage.start_evaluation(session=db, evaluation_id=first["evaluations"][0]["id"], worker_id="host:1", total=2,
                             sim_version="1", image_digest=None, sandbox="process")  # fmt: skip
    moved = client.get(f"/api/v1/submissions/{second['id']}", headers=bob.headers).json()["queue"]
    assert (moved["position"], moved["queued"]) == (1, 2)
    assert 0 < moved["starts_in_s"] <= 33  # what the running one has left, shared by two workers
    running = client.get(f"/api/v1/submissions/{first['id']}", headers=alice.headers).json()
    assert running["state"] == "running" and running["queue"] is None

    page = client.get(f"/submissions/{third['id']}", headers=bob.headers).text
    assert "Position <strong>2</strong> of 2 in the queue (2 workers): it should start in about" in page


def test_no_estimate_without_recent_runs(client: Any, alice: Account, db: Session) -> None:
    body = submit(client, alice).json()
    assert body["queue"] == {"position": 1, "queued": 1, "workers": 1, "starts_in_s": None, "done_in_s": None}
    page = client.get(f"/submissions/{body['id']}", headers=alice.headers).text
    assert "Position <strong>1</strong> of 1 in the queue (1 worker)." in page


def test_audits_are_not_in_the_students_queue(
    client: Any, roomy: Any, alice: Account, organiser: Account, db: Session
) -> None:
    finished_runs(db, alice, client, [10.0])
    scored = client.get("/api/v1/submissions", headers=alice.headers).json()["data"][0]["id"]
    client.post(f"/api/v1/admin/submissions/{scored}/audit", headers=organiser.headers, json={})
    queued = submit(client, alice).json()
    assert queued["queue"]["position"] == 1 and queued["queue"]["queued"] == 1


def test_heartbeats_are_upserted_and_forgotten(db: Session) -> None:
    now = utcnow()
    beat(session=db, worker_id="host:1", now=now - dt.timedelta(seconds=30))
    beat(session=db, worker_id="host:1", now=now)
    rows = db.scalars(select(WorkerHeartbeat)).all()
    assert [(r.worker_id, r.beat_at) for r in rows] == [("host:1", now)]
    assert workers_alive(session=db, now=now, within=dt.timedelta(seconds=60)) == 1
    assert workers_alive(session=db, now=now + dt.timedelta(seconds=61), within=dt.timedelta(seconds=60)) == 0
    forget_worker(session=db, worker_id="host:1")
    assert db.scalars(select(WorkerHeartbeat)).all() == []
