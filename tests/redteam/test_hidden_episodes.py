"""Nothing a policy writes about a hidden (keyed) episode reaches its author (issue 15, finding 1).

A keyed evaluation set, the real pipeline (``run_evaluation``, the Docker sandbox, SQLite) and the real API read as
the participant and as an organiser. Reviewed main returned every private task to the participant in
``GET /submissions/{id}`` when the policy raised with them, and a hand-made ``bad_action`` frame stored a message of
3,000,064 characters.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from starlette.exceptions import StarletteDeprecationWarning

from layersched.server import storage
from layersched.server.app import create_app
from layersched.server.bundles import store_bundle
from layersched.server.db import make_engine, make_sessionmaker
from layersched.server.models import EpisodeResult, Evaluation, User
from layersched.sim.evalset import load_evalset
from layersched.worker.pipeline import run_evaluation
from tests.redteam.conftest_policies import (  # noqa: F401 - fixtures, registered by being imported
    GREEDY,
    POLICIES,
    healthy_host,
    sandbox_image,
    worker_settings,
)
from tests.server.conftest import Captured

with warnings.catch_warnings():
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("sandbox_image", "healthy_host")]


def keyed_set(path: Path, *, unkeyed_last: bool = False) -> Path:
    """One scenario, two keyed episodes (a public and a private one), and with ``unkeyed_last`` an unkeyed (public
    workload) episode written after them in the file."""
    keys = [secrets.token_hex(32) for _ in range(2)]
    episodes = [
        f'{{ id = "hidden-pub", key = "{keys[0]}" }}',
        f'{{ id = "hidden-priv", split = "private", key = "{keys[1]}" }}',
    ]
    if unkeyed_last:
        episodes.append("{ seed = 5 }")
    path.write_text(
        'format = "layersched-evalset"\nversion = 1\nname = "keyed"\n\n[[scenario]]\nname = "lab-40"\nweight = 1.0\n'
        'catalog = "lab"\nn_nodes = 10\nn_tasks = 40\narrival_rate = 0.3\n'
        f"episodes = [{', '.join(episodes)}]\n"
    )
    return path


class World:
    """A worker and an API on one database: a participant submits, the worker evaluates, both read."""

    def __init__(self, root: Path, evalset: Path) -> None:
        self.settings = worker_settings(f"sqlite:///{root / 'layersched.db'}", root, evalset)
        self.engine = make_engine(self.settings.database_url)
        self.sessions: sessionmaker[Session] = make_sessionmaker(self.engine)
        with self.sessions() as session:
            student = storage.create_user(session=session, name="student", email="student@example.org")
            organiser = storage.create_user(session=session, name="olga", email="olga@example.org", role="organiser")
            self.student = storage.issue_token(session=session, user_id=student.id)[1]
            self.organiser = storage.issue_token(session=session, user_id=organiser.id)[1]
        self.client = TestClient(create_app(self.settings, enqueuer=Captured()))

    def evaluate(self, policy: str | Path) -> tuple[int, Evaluation, list[EpisodeResult]]:
        """Evaluate the red team's policy ``policy`` (a folder name) or the policy file ``policy``."""
        source = policy if isinstance(policy, Path) else POLICIES / policy / "policy.py"
        data = source.read_bytes()
        store_bundle(data, bundle_dir=self.settings.bundle_dir)
        with self.sessions() as session:
            owner = session.scalar(select(User).where(User.name == "student"))
            assert owner is not None
            submission, evaluation = storage.create_submission(
                session=session,
                owner=owner,
                name=source.parent.name,
                description="",
                bundle_sha256=hashlib.sha256(data).hexdigest(),
                bundle_format="py",
                bundle_bytes=len(data),
                phase=storage.get_phase(session=session, name=storage.DEFAULT_PHASE),
            )
            submission_id, evaluation_id = submission.id, evaluation.id
        run_evaluation(evaluation_id, settings=self.settings, sessions=self.sessions, worker_id="redteam")
        with self.sessions() as session:
            row = session.get(Evaluation, evaluation_id)
            assert row is not None
            episodes = list(
                session.scalars(
                    select(EpisodeResult).filter_by(evaluation_id=evaluation_id).order_by(EpisodeResult.recorded_at)
                )
            )
            session.expunge_all()
        return submission_id, row, episodes

    def read(self, token: str, submission_id: int) -> str:
        """Everything the API tells ``token``'s user about the submission, as one text."""
        headers = {"Authorization": f"Bearer {token}"}
        bodies = [
            self.client.get(f"/api/v1/submissions/{submission_id}", headers=headers),
            self.client.get(f"/api/v1/submissions/{submission_id}/logs", headers=headers),
            self.client.get("/api/v1/submissions", headers=headers),
            self.client.get(f"/submissions/{submission_id}", headers=headers),
        ]
        for response in bodies:
            assert response.status_code == 200, response.text
        return "\n".join(response.text for response in bodies)

    def close(self) -> None:
        self.client.close()
        self.engine.dispose()


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path, keyed_set(tmp_path / "keyed.toml"))
    yield w
    w.close()


def tasks_of(world: World, episode_id: str) -> list[tuple[float, int, float]]:
    """The hidden workload's first tasks (what the policy puts in its exception), computed from the key."""
    from layersched.sim.tracks.layers_v1.workload import draw_episode

    evalset = load_evalset(world.settings.evalset_path)
    job = next(job for job in evalset.jobs() if job.episode.id == episode_id)
    _, tasks = draw_episode(job.scenario, job.episode.workload_rng())
    return [(t.arrival, t.image, t.cycles) for t in tasks]


def test_a_traceback_about_a_hidden_episode_reaches_organisers_only(world: World) -> None:
    submission_id, evaluation, episodes = world.evaluate("exception_leak")
    assert (evaluation.state, evaluation.error_category) == ("failed", "crash")
    (failed,) = episodes
    assert (failed.episode_id, failed.hidden, failed.status, failed.step) == ("hidden-pub", True, "crash", 20)
    leaked = repr(tasks_of(world, "hidden-pub")[:21])
    assert leaked in failed.message  # the policy did write them: organisers read it
    student = world.read(world.student, submission_id)
    assert "LEAK" not in student and str(tasks_of(world, "hidden-pub")[0][0]) not in student
    assert "scenario 'lab-40' episode 'hidden-pub': crash at step 20 (hidden episode" in student
    assert json.loads(
        world.client.get(
            f"/api/v1/submissions/{submission_id}/logs", headers={"Authorization": f"Bearer {world.student}"}
        ).text
    )["data"] == [
        {
            "scenario": "lab-40",
            "episode": "hidden-pub",
            "hidden": True,
            "status": "crash",
            "step": 20,
            "message": "crash at step 20 (hidden episode: its details are shown to organisers only)",
            "stdout": None,
            "stderr": None,
        }
    ]
    assert "LEAK" in world.read(world.organiser, submission_id)


def test_an_oversized_value_is_cut_before_it_is_stored(world: World) -> None:
    _, evaluation, (failed,) = world.evaluate("oversized_value")
    assert (evaluation.state, failed.status) == ("failed", "invalid_action")
    assert (
        failed.message
        == "step 1: policy returned " + "V" * 200 + " of type " + "V" * 200 + ", expected an int node index"
    )
    assert len(evaluation.error_message or "") < 1000


def test_unkeyed_episodes_run_first_and_no_episode_learns_of_another(tmp_path: Path) -> None:
    """The set lists the hidden episodes first; the unkeyed one (whose output the participant reads) runs first,
    and the policy that reads what earlier episodes left in a pipe opened at import finds nothing."""
    world = World(tmp_path, keyed_set(tmp_path / "keyed.toml", unkeyed_last=True))
    try:
        submission_id, evaluation, episodes = world.evaluate("cross_episode_pipe")
        assert evaluation.state == "succeeded", evaluation.error_message
        assert [e.episode_id for e in episodes] == ["seed5", "hidden-pub", "hidden-priv"]
        (unkeyed,) = [e for e in episodes if not e.hidden]
        assert unkeyed.stdout == "from earlier episodes: 0 bytes\n"
        assert "from earlier episodes: 0 bytes" in world.read(world.student, submission_id)
    finally:
        world.close()


def test_audit_lines_about_hidden_episodes_name_no_metric(world: World) -> None:
    from layersched.worker.pipeline import compare_audit

    _, evaluation, episodes = world.evaluate("cross_episode_pipe")
    changed = [
        _copy(e, metrics={"mean_completion": (e.metrics or {}).get("mean_completion", 0.0) + 1.0}) for e in episodes
    ]
    verdict = compare_audit(episodes, changed, evaluation, evaluation)
    assert any("mean_completion" in line for line in verdict["mismatches"])
    assert verdict["public_mismatches"] == [
        "lab-40/hidden-pub: differs (hidden episode)",
        "lab-40/hidden-priv: differs (hidden episode)",
    ]


def _copy(row: EpisodeResult, **changes: Any) -> EpisodeResult:
    fields = {c.name: getattr(row, c.name) for c in EpisodeResult.__table__.columns}
    return EpisodeResult(**{**fields, **changes})


def _texts_of(world: World, episode: EpisodeResult, bundle_sha256: str) -> list[str]:
    """What keeping or drawing the hidden episode's schedule would carry: its actions as the trace hashes them (the
    greedy policy replayed in-process from the key: the in-process run is the sandboxed run) and, where its track
    draws schedules, every hover text of them."""
    import random

    from layersched.sim.episodes import policy_seed, trace_hash
    from layersched.sim.tracks import get_track
    from layersched.sim.tracks.schedules import schedule_views

    evalset = load_evalset(world.settings.evalset_path)
    job = next(job for job in evalset.jobs() if job.episode.id == episode.episode_id)
    track = get_track(evalset.track)
    policy = track.baseline("Greedy")
    rng = random.Random(policy_seed(bundle_sha256, track.scenario_hash(job.scenario), episode.episode_id))
    actions = track.run_episode(job.scenario, policy, job.episode.workload_rng(), rng).actions
    assert trace_hash(actions) == episode.trace_hash, "the sandboxed run's actions, recomputed"
    texts = [",".join(map(str, actions[i : i + 12])) for i in range(0, len(actions) - 12, 6)]
    views = schedule_views(track)
    if views is not None:
        record = views.replay(job.scenario, job.episode.workload_rng(), actions)
        for figure in views.figures(record):
            texts += [t for t in re.findall(r"<title>([^<]*)</title>", figure.svg) if "task" in t or "job" in t]
    return texts


def test_no_route_page_export_or_log_carries_a_keyed_episodes_actions_or_schedule(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The real pipeline (Docker sandbox) on a set with two keyed episodes and a seeded one: only the seeded one
    keeps its actions; nothing of the keyed ones' actions or schedules is in a log line, an API answer, a page or a
    replay page, for the participant as for an organiser."""
    from layersched.server.models import EpisodeActions

    world = World(tmp_path, keyed_set(tmp_path / "keyed.toml", unkeyed_last=True))
    try:
        with caplog.at_level(logging.DEBUG):
            submission_id, evaluation, episodes = world.evaluate(GREEDY / "policy.py")
        assert evaluation.state == "succeeded", evaluation.error_message
        with world.sessions() as session:
            kept = session.scalars(select(EpisodeActions.episode_result_id)).all()
        assert sorted(kept) == [e.id for e in episodes if not e.hidden] and len(kept) == 1
        bundle = hashlib.sha256((GREEDY / "policy.py").read_bytes()).hexdigest()
        texts = [t for e in episodes if e.hidden for t in _texts_of(world, e, bundle)]
        assert len(texts) >= 10
        logs = "\n".join(record.getMessage() for record in caplog.records)
        for token in (world.student, world.organiser):
            headers = {"Authorization": f"Bearer {token}"}
            bodies = [world.read(token, submission_id), world.client.get("/", headers=headers).text]
            for episode_id in ("hidden-pub", "hidden-priv", "seed5"):
                page = world.client.get(f"/submissions/{submission_id}/episodes/lab-40/{episode_id}", headers=headers)
                assert page.status_code == 404 or episode_id == "seed5", page.text
                bodies.append(page.text)
            if token == world.organiser:
                bodies.append(world.client.get(f"/api/v1/admin/evaluations/{evaluation.id}", headers=headers).text)
            for body in [*bodies, logs]:
                for text in texts:
                    assert text not in body
    finally:
        world.close()
