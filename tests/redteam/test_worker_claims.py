"""A worker claims an evaluation before anything slow, and no exception loops an evaluation for ever (issue 15,
findings 14 and 9).

Reviewed main: under a burst an evaluation stayed ``queued`` until its sandbox had started and imported, so the
reconciler re-sent messages a worker was already running; and an exception nobody expected (a bundle that could
not be unpacked raised ``FileExistsError``) left Celery acknowledging the message, the evaluation queued with 0
attempts, and the reconciler sending it again for ever, while the participant's next upload got 429.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from layersched.server.config import Settings
from layersched.server.models import Evaluation, Submission
from layersched.worker import tasks
from layersched.worker.pipeline import run_evaluation
from layersched.worker.sandbox.runner import open_sandbox
from tests.pipeline.conftest import (  # noqa: F401 - fixtures, registered by being imported
    Submitted,
    baseline_cache,
    database_url,
    sessions,
    settings,
    submit,
)


def test_an_evaluation_is_running_before_its_sandbox_starts(
    settings: Settings,  # noqa: F811 - the fixture
    sessions: sessionmaker[Session],  # noqa: F811
    submit: Any,  # noqa: F811
) -> None:
    sub: Submitted = submit("greedy")
    seen: list[tuple[str, bool, int]] = []

    def watching(*args: Any, **kwargs: Any) -> Any:
        with sessions() as session:
            row = session.get(Evaluation, sub.evaluation_id)
            assert row is not None
            seen.append((row.state, row.heartbeat_at is not None, row.attempts))
        return open_sandbox(*args, **kwargs)

    report = run_evaluation(
        sub.evaluation_id, settings=settings, sessions=sessions, worker_id="w1", open_sandbox_fn=watching
    )
    assert report.state == "succeeded"
    assert seen == [("running", True, 1)]


@dataclass
class _Request:
    retries: int = 0


class _Retry(Exception):
    pass


@dataclass
class FakeTask:
    """What ``tasks._run`` uses of a bound Celery task: its retry count, and ``retry`` (raising, as Celery's does)."""

    request: _Request = field(default_factory=_Request)

    def retry(self, *, exc: BaseException, countdown: float) -> _Retry:
        self.request.retries += 1
        return _Retry(str(exc))


def test_an_unexpected_exception_counts_as_an_attempt_and_ends_the_evaluation(
    settings: Settings,  # noqa: F811 - the fixture
    sessions: sessionmaker[Session],  # noqa: F811
    submit: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sub: Submitted = submit("greedy")
    monkeypatch.setattr(tasks, "get_settings", lambda: settings)
    monkeypatch.setattr(tasks, "_sessions", lambda: sessions)

    def unpacking_fails(evaluation_id: int, **kwargs: Any) -> Any:
        with sessions() as session:  # as run_evaluation does before it unpacks: the attempt is counted
            row = session.get(Evaluation, evaluation_id)
            assert row is not None
            row.state, row.attempts = "running", row.attempts + 1
            session.commit()
        raise FileExistsError(17, "File exists", "data")

    monkeypatch.setattr(tasks, "run_evaluation", unpacking_fails)
    task = FakeTask()
    outcomes = []
    for _ in range(settings.max_attempts):
        try:
            outcomes.append(tasks._run(task, sub.evaluation_id))  # type: ignore[arg-type]
        except _Retry:
            outcomes.append("retry")
    assert outcomes == ["retry"] * (settings.max_attempts - 1) + ["failed"]
    with sessions() as session:
        row = session.get(Evaluation, sub.evaluation_id)
        owner = session.get(Submission, sub.submission_id)
        assert row is not None and owner is not None
        assert (row.state, row.error_category, row.infrastructure_failure) == ("failed", "infrastructure", True)
        assert f"gave up after {settings.max_attempts} attempts: [Errno 17] File exists: 'data'" in (
            row.error_message or ""
        )
        assert owner.counts_against_quota is False  # the service's failure: given back
