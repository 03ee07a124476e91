"""Operations: health (real Redis), Prometheus metrics, OpenAPI docs, the admin functions of the CLI."""

from __future__ import annotations

import hashlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session

from layersched.server import admin
from layersched.server.app import create_app
from layersched.server.config import Settings
from layersched.server.errors import Conflict, NotFound
from layersched.sim.tracks import TrackError, get_track
from layersched.sim.tracks import registry as track_registry

from . import stand_in_track
from .conftest import BROKER, Account, TestClient, run_evaluation, submit


@pytest.mark.redis
def test_healthz_ok(client: Any, organiser: Account) -> None:
    response = client.get("/healthz")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})
    detailed = client.get("/healthz", headers=organiser.headers)
    assert (detailed.status_code, detailed.json()) == (200, {"status": "ok", "database": "ok", "broker": "ok"})


def test_healthz_names_the_broker_to_organisers_only(
    settings: Settings, enqueued: Any, organiser: Account, alice: Account
) -> None:
    down = settings.model_copy(update={"broker_url": "redis://127.0.0.1:1/0"})
    with TestClient(create_app(down, enqueuer=enqueued)) as client:
        anonymous = client.get("/healthz")
        participant = client.get("/healthz", headers=alice.headers)
        detailed = client.get("/healthz", headers=organiser.headers)
        forged = client.get("/healthz", headers={"Authorization": "Bearer lst_forged_token"})
    assert (anonymous.status_code, anonymous.json()) == (503, {"status": "unavailable"})
    assert (participant.status_code, participant.json()) == (503, {"status": "unavailable"})
    body = detailed.json()
    assert detailed.status_code == 503 and body["status"] == "unavailable"
    assert body["database"] == "ok" and body["broker"].startswith("error: ")
    assert forged.status_code == 401


def test_healthz_tells_anyone_nothing_of_the_databases_error(
    tmp_path: Path, enqueued: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Reviewed main answered anyone with the driver's error text (host, port, database name); now the log has it."""
    missing = Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url="postgresql+psycopg://postgres@127.0.0.1:5432/layersched_no_such_database",
        broker_url="redis://127.0.0.1:1/0",
    )
    with TestClient(create_app(missing, enqueuer=enqueued)) as client:
        anonymous = client.get("/healthz")
        with_token = client.get("/healthz", headers={"Authorization": "Bearer lst_any_token"})
    for response in (anonymous, with_token):  # no token can be checked without the database
        assert (response.status_code, response.json()) == (503, {"status": "unavailable"})
        assert "layersched_no_such_database" not in response.text
    assert "database error: OperationalError" in caplog.text and "layersched_no_such_database" in caplog.text


@pytest.fixture
def silent_peer() -> Iterator[socket.socket]:
    """A listening local TCP socket that never accepts and never says a word (the kernel completes connections from
    its backlog): a stalled broker or database. Closing it resets the connections still waiting."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield listener


def get_within(client: Any, path: str, seconds: float, peer: socket.socket) -> Any:
    """``client.get(path)`` from a thread given ``seconds`` (generous: not a timing check, a bound on a hang). A
    request still hanging then fails the test, after ``peer`` is closed so that the request (and the app) can end."""
    answers: list[Any] = []

    def get() -> None:
        try:
            answers.append(client.get(path))
        except BaseException as exc:  # a hung request fails once the peer is closed: kept for the test to see
            answers.append(exc)

    thread = threading.Thread(target=get, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        peer.close()
        thread.join(seconds)
        pytest.fail(f"GET {path} had no answer within {seconds} s")
    (answer,) = answers
    if isinstance(answer, BaseException):
        raise answer
    return answer


def test_healthz_answers_while_the_broker_is_stalled(
    settings: Settings, enqueued: Any, silent_peer: socket.socket
) -> None:
    """Review (issue 30 follow-up, item 8): a broker that accepts connections and never answers held /healthz (and
    a server thread) for ever: the probe had a connect timeout but no read timeout. Now it reports unhealthy."""
    port = silent_peer.getsockname()[1]
    stalled = settings.model_copy(update={"broker_url": f"redis://127.0.0.1:{port}/0"})
    with TestClient(create_app(stalled, enqueuer=enqueued)) as client:
        response = get_within(client, "/healthz", 60, silent_peer)
    assert (response.status_code, response.json()) == (503, {"status": "unavailable"})


@pytest.mark.redis
def test_healthz_answers_while_the_database_is_stalled(enqueued: Any, silent_peer: socket.socket) -> None:
    """The same for a PostgreSQL server that accepts connections and never answers (item 8's database probe)."""
    port = silent_peer.getsockname()[1]
    stalled = Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=f"postgresql+psycopg://postgres@127.0.0.1:{port}/layersched",
        broker_url=BROKER,
        notify_interval_s=0,
    )
    with TestClient(create_app(stalled, enqueuer=enqueued)) as client:
        response = get_within(client, "/healthz", 60, silent_peer)
    assert (response.status_code, response.json()) == (503, {"status": "unavailable"})


def test_metrics_answer_while_the_broker_is_stalled(
    settings: Settings, enqueued: Any, organiser: Account, silent_peer: socket.socket
) -> None:
    """The scrape's queue depths are a probe of the broker too: bounded alike, the broker counts as down."""
    port = silent_peer.getsockname()[1]
    stalled = settings.model_copy(update={"broker_url": f"redis://127.0.0.1:{port}/0"})
    with TestClient(create_app(stalled, enqueuer=enqueued)) as client:
        client.headers.update(organiser.headers)
        response = get_within(client, "/metrics", 60, silent_peer)
    assert response.status_code == 200 and "layersched_broker_up 0.0" in response.text


@pytest.mark.redis
def test_metrics_are_for_organisers(client: Any, alice: Account, organiser: Account, db: Session) -> None:
    body = submit(client, alice).json()
    run_evaluation(db, body["evaluations"][0]["id"])
    submit(client, alice)
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers=alice.headers).status_code == 403
    response = client.get("/metrics", headers=organiser.headers)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert 'layersched_submissions{state="succeeded"} 1.0' in text
    assert 'layersched_submissions{state="queued"} 1.0' in text
    assert 'layersched_evaluations{kind="initial",state="queued"} 1.0' in text
    assert "layersched_evaluation_duration_seconds_count 1.0" in text
    assert 'layersched_queue_depth{queue="evaluations"}' in text
    assert "layersched_broker_up 1.0" in text


METRICS_TOKEN = "lsm_prometheus-reads-metrics-only"


def test_the_metrics_token_reads_the_metrics_and_nothing_else(
    settings: Settings, enqueued: Any, alice: Account, organiser: Account
) -> None:
    """Review (issue 30 follow-up, item 9): Prometheus needed an organiser's token, so the monitoring host held a
    credential that could disqualify, export hidden data and so on. The metrics token reads /metrics and is refused
    everywhere else: the API's organiser and participant routes, /healthz (a token that is sent must be valid) and
    the pages' sign-in. The server holds its SHA-256 only."""
    digest = hashlib.sha256(METRICS_TOKEN.encode()).hexdigest()
    with TestClient(create_app(settings.model_copy(update={"metrics_token_sha256": digest}), enqueuer=enqueued)) as c:
        bearer = {"Authorization": f"Bearer {METRICS_TOKEN}"}
        scraped = c.get("/metrics", headers=bearer)
        assert scraped.status_code == 200 and "layersched_broker_up" in scraped.text
        assert c.get("/metrics", headers=organiser.headers).status_code == 200  # organisers still read it
        assert c.get("/metrics", headers=alice.headers).status_code == 403
        forged = {"Authorization": f"Bearer {METRICS_TOKEN}x"}
        assert c.get("/metrics", headers=forged).status_code == 401
        for path in ("/api/v1/admin/audit-log", "/api/v1/admin/users", "/api/v1/me", "/api/v1/submissions", "/healthz"):
            refused = c.get(path, headers=bearer)
            assert (refused.status_code, refused.json()["error"]["code"]) == (401, "unauthorized"), path
        signin = c.post("/signin", data={"token": METRICS_TOKEN}, follow_redirects=False)
        assert signin.status_code == 401


def test_the_cli_makes_a_metrics_token_and_the_setting_the_api_takes(
    settings: Settings, enqueued: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """``layersched admin token metrics`` (no server needed) prints a token and its hash as the API's setting."""
    from layersched.sdk.cli import main

    assert main(["admin", "token", "metrics"]) == 0
    token_line, setting_line = capsys.readouterr().out.splitlines()
    token = token_line.rpartition(": ")[2]
    name, _, digest = setting_line.rpartition(": ")[2].partition("=")
    assert token.startswith("lsm_") and len(token) > 40 and name == "LAYERSCHED_METRICS_TOKEN_SHA256"
    with TestClient(create_app(settings.model_copy(update={"metrics_token_sha256": digest}), enqueuer=enqueued)) as c:
        assert c.get("/metrics", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        assert c.get("/api/v1/me", headers={"Authorization": f"Bearer {token}"}).status_code == 401


def test_without_a_metrics_token_set_only_organisers_read_the_metrics(settings: Settings, enqueued: Any) -> None:
    """Unset (the default), no metrics token is accepted: only organisers' tokens open /metrics."""
    assert settings.metrics_token_sha256 is None
    with TestClient(create_app(settings, enqueuer=enqueued)) as c:
        assert c.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).status_code == 401


def test_the_scrapes_aggregates_count_what_the_rows_say(
    client: Any, settings: Settings, alice: Account, organiser: Account, db: Session
) -> None:
    """The scrape's aggregate queries (server/metrics.py) against the rows counted one by one, as reviewed main's
    scrape did, over initial evaluations, reruns and audits in every state, on both databases."""
    from collections import Counter

    from sqlalchemy import select

    from layersched.server import metrics, storage
    from layersched.server.models import Evaluation

    quick = settings.model_copy(update={"daily_quota": 10, "max_in_flight": 10})
    with TestClient(create_app(quick, enqueuer=lambda *a, **k: None)) as c:
        ids = [submit(c, alice, name=f"s{i}").json()["evaluations"][0]["id"] for i in range(4)]
    run_evaluation(db, ids[0])
    run_evaluation(db, ids[1], fail=("crash", "boom"))
    run_evaluation(db, ids[2])
    storage.cancel_submission(session=db, submission_id=4, actor=organiser.user)
    rerun = storage.create_rerun(session=db, submission_id=1, evalset_name=None, actor=organiser.user)
    audit = storage.create_audit(session=db, submission_id=3, sample=None, actor=organiser.user)
    run_evaluation(db, audit.id, fail=("crash", "x"))
    assert rerun.state == "queued"

    db.expire_all()
    rows = db.execute(select(Evaluation).order_by(Evaluation.id)).scalars().all()
    newest = {e.submission_id: e.state for e in rows if e.kind != "audit"}
    durations = [
        (e.finished_at - e.started_at).total_seconds()
        for e in rows
        if e.state in ("succeeded", "failed") and e.started_at is not None and e.finished_at is not None
    ]
    assert metrics.evaluation_counts(db) == Counter((e.kind, e.state) for e in rows)
    assert metrics.submission_states(db) == Counter(newest.values())
    buckets, count, total = metrics.duration_histogram(db)
    assert buckets == [sum(1 for d in durations if d <= b) for b in metrics.DURATION_BUCKETS]
    assert count == len(durations) == 4 and total == pytest.approx(sum(durations), abs=0.01)


def test_docs_and_openapi(client: Any) -> None:
    assert client.get("/docs").status_code == 200
    spec = client.get("/openapi.json").json()
    assert "/api/v1/submissions" in spec["paths"] and "/api/v1/admin/audit-log" in spec["paths"]
    # The title says what the API is; the summary names every track (issue 29), not only the lab's problem.
    assert spec["info"]["title"] == "layersched API"
    assert all(track in spec["info"]["summary"] for track in ("layers-v1", "jobs-v1", "workflows-v1"))


def test_admin_cli_functions(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, database_url=f"sqlite:///{tmp_path}/cli.db")  # type: ignore[call-arg]
    admin.upgrade_database(settings=settings)
    created = admin.add_user(name="olga", email="olga@example.org", role="organiser", settings=settings)
    assert created.role == "organiser" and created.token.startswith("lst_")
    token = admin.new_token(name="olga", settings=settings)
    assert token.user == "olga" and token.token != created.token
    admin.revoke_token(token_id=token.id, settings=settings)
    admin.register_evalset(
        name="sample",
        commitment="c" * 64,
        path="hidden_seeds/sample.toml",
        scenarios=[{"name": "lab", "weight": 1.0, "public_episodes": 3}],
        settings=settings,
    )
    with pytest.raises(Conflict, match="a user with name 'olga' already exists"):
        admin.add_user(name="olga", email="o2@example.org", settings=settings)
    with pytest.raises(NotFound, match="user 'nobody' does not exist"):
        admin.new_token(name="nobody", settings=settings)

    with TestClient(create_app(settings, enqueuer=lambda *a, **k: None)) as client:
        headers = {"Authorization": f"Bearer {created.token}"}
        assert client.get("/api/v1/me", headers=headers).json()["role"] == "organiser"
        revoked = {"Authorization": f"Bearer {token.token}"}
        assert client.get("/api/v1/me", headers=revoked).status_code == 401
        log = client.get("/api/v1/admin/audit-log", headers=headers).json()["data"]
        assert [e["action"] for e in log][:2] == ["register_evalset", "revoke_token"]


def test_register_evalset_from_file(tmp_path: Path) -> None:
    from layersched.sim.evalset import load_evalset

    settings = Settings(_env_file=None, database_url=f"sqlite:///{tmp_path}/cli.db")  # type: ignore[call-arg]
    admin.upgrade_database(settings=settings)
    sample = Path(__file__).resolve().parents[2] / "hidden_seeds" / "sample.toml"
    registered = admin.register_evalset(path=sample, settings=settings)
    expected = load_evalset(sample)
    assert (registered.name, registered.commitment) == (expected.name, expected.commitment)
    assert [s["name"] for s in registered.scenarios] == [sc.name for sc in expected.scenarios]
    with TestClient(create_app(settings, enqueuer=lambda *a, **k: None)) as client:
        current = client.get("/api/v1/evalsets/current").json()
    assert current["commitment"] == expected.commitment
    assert all(s["public_episodes"] >= 0 and s["weight"] > 0 for s in current["scenarios"])
    # A file without a track is on layers-v1 (the sample set is), and the server says so.
    assert registered.track == expected.track == "layers-v1" and current["track"] == "layers-v1"


def test_register_evalset_refuses_an_unknown_track_naming_the_known(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, database_url=f"sqlite:///{tmp_path}/cli.db")  # type: ignore[call-arg]
    admin.upgrade_database(settings=settings)
    with pytest.raises(TrackError, match=r"^unknown track 'packing-v9'; known tracks: .*layers-v1"):
        admin.register_evalset(
            name="toy", commitment="t" * 64, path="toy.toml", scenarios=[], track="packing-v9", settings=settings
        )
    stand_in_track.register()
    registered = admin.register_evalset(
        name="toy", commitment="t" * 64, path="toy.toml", scenarios=[], track="standin-v1", settings=settings
    )
    assert registered.track == "standin-v1"


def test_the_app_registers_the_track_modules_of_its_settings(tmp_path: Path) -> None:
    module = "tests.server.stand_in_track"
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, database_url=f"sqlite:///{tmp_path}/app.db", track_modules=(module,)
    )
    registered = dict(track_registry._registered)
    track_registry._registered.pop("standin-v1", None)  # as in a fresh server process
    try:
        create_app(settings, enqueuer=lambda *a, **k: None)
        assert get_track("standin-v1") is stand_in_track.TRACK
    finally:
        track_registry._registered.clear()
        track_registry._registered.update(registered)
    bad = settings.model_copy(update={"track_modules": ("tests.server.no_such_track",)})
    with pytest.raises(TrackError, match=r"^track module 'tests.server.no_such_track' cannot be imported"):
        create_app(bad, enqueuer=lambda *a, **k: None)
