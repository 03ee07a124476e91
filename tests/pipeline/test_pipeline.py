"""run_evaluation end to end on a real database with the process sandbox: scores, resume, failures, audits."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from layersched.server import storage
from layersched.server.config import Settings
from layersched.server.models import EpisodeResult
from layersched.sim.episodes import trace_hash
from layersched.sim.evalset import evaluate_policy, load_evalset, score_baselines
from layersched.sim.tracks.layers_v1.baselines import BASELINES
from layersched.worker.pipeline import RetryableError, run_evaluation
from layersched.worker.sandbox.runner import open_sandbox
from tests.pipeline.conftest import SAMPLE, Submitted, evaluation, organiser


class _Killed(BaseException):
    """Stands in for SIGKILL: nothing after it runs, not even except-Exception handlers."""


def _episodes(sessions: sessionmaker[Session], evaluation_id: int) -> dict[tuple[str, str], EpisodeResult]:
    with sessions() as session:
        rows = session.query(EpisodeResult).filter_by(evaluation_id=evaluation_id).all()
        return {(r.scenario, r.episode_id): r for r in rows}


def _run(settings: Settings, sessions: sessionmaker[Session], evaluation_id: int, worker: str = "w1", **kw: Any) -> Any:
    return run_evaluation(evaluation_id, settings=settings, sessions=sessions, worker_id=worker, **kw)


def test_greedy_submission_is_scored_exactly_like_the_trusted_simulator(
    settings: Settings, sessions: sessionmaker[Session], submit: Any
) -> None:
    sub: Submitted = submit("greedy")
    report = _run(settings, sessions, sub.evaluation_id)
    assert report.state == "succeeded" and report.episodes_run == 6
    done = evaluation(sessions, sub.evaluation_id)
    assert (done.state, done.progress_done, done.progress_total, done.sandbox) == ("succeeded", 6, 6, "process")
    # The same policy in-process, with the rng seeded from the same bundle hash: identical actions and metrics.
    expected = evaluate_policy(load_evalset(SAMPLE), BASELINES["Greedy"], bundle_id=sub.bundle_sha256)
    rows = _episodes(sessions, sub.evaluation_id)
    for record in expected:
        row = rows[(record.scenario, record.episode)]
        assert (row.status, row.trace_hash, row.primary_value) == ("ok", record.trace_hash, record.mean_completion)
        assert row.metrics == {
            "mean_completion": record.mean_completion,
            "p95_completion": record.p95_completion,
            "cloud_share": record.cloud_share,
        }
    assert done.score_public is not None and done.score_private is not None
    assert set(done.score_public["per_scenario"]) == {"lab-300", "official-5n"}
    # Greedy against Greedy's reference: 1.0 unless a tie was broken the other way by the other rng.
    assert done.score_public["overall"] == pytest.approx(1.0, abs=0.01)
    assert done.score_public["ci_low"] <= done.score_public["overall"] <= done.score_public["ci_high"]
    # The board's metric columns: each metric's mean over the split's episodes.
    public = [r for r in expected if r.split == "public"]
    assert done.score_public["metrics"]["cloud_share"] == pytest.approx(sum(r.cloud_share for r in public) / 4)
    # Every sample episode is seeded: each keeps its accepted actions (hashing to its trace) and Greedy's record.
    greedy = {
        (r.scenario, r.episode): r for r in score_baselines(load_evalset(SAMPLE), settings.baseline_cache_dir)["Greedy"]
    }
    with sessions() as session:
        for key, row in rows.items():
            stored = storage.episode_replay(session=session, episode_result_id=row.id)
            assert stored is not None and (stored.track, stored.seed) == ("layers-v1", int(key[1].removeprefix("seed")))
            assert trace_hash(stored.actions) == row.trace_hash and len(stored.actions) == row.n_actions == 300
            assert (
                stored.reference_actions is not None and trace_hash(stored.reference_actions) == greedy[key].trace_hash
            )
            assert stored.reference == {
                "baseline": "Greedy",
                "metrics": greedy[key].metrics,
                "primary": greedy[key].primary,
                "trace_hash": greedy[key].trace_hash,
            }


def test_killed_evaluation_resumes_where_it_stopped_with_the_same_actions(
    settings: Settings, sessions: sessionmaker[Session], submit: Any
) -> None:
    reference_sub: Submitted = submit("greedy")
    _run(settings, sessions, reference_sub.evaluation_id)
    sub: Submitted = submit("greedy")

    def dies_after_two(*args: Any, **kwargs: Any) -> Any:
        session = open_sandbox(*args, **kwargs)
        real, calls = session.run_episode, []

        def run_episode(job: Any) -> Any:
            if len(calls) == 2:
                raise _Killed()
            calls.append(job)
            return real(job)

        session.run_episode = run_episode  # type: ignore[method-assign]
        return session

    with pytest.raises(_Killed):
        _run(settings, sessions, sub.evaluation_id, open_sandbox_fn=dies_after_two)
    half = evaluation(sessions, sub.evaluation_id)
    assert (half.state, half.progress_done, half.attempts) == ("running", 2, 1)
    first_two = {k: r.trace_hash for k, r in _episodes(sessions, sub.evaluation_id).items()}

    # While the first worker looks alive, a duplicate message must not start a second run.
    assert _run(settings, sessions, sub.evaluation_id, worker="w2").state == "skipped"
    with sessions() as session:  # what the reconciler does once the heartbeat is stale
        storage.requeue_evaluation(session=session, evaluation_id=sub.evaluation_id)
    report = _run(settings, sessions, sub.evaluation_id, worker="w2")
    assert (report.state, report.episodes_run) == ("succeeded", 4)
    resumed = _episodes(sessions, sub.evaluation_id)
    assert len(resumed) == 6 and all(resumed[k].trace_hash == h for k, h in first_two.items())
    # Same bundle bytes -> same policy seeds -> the same actions as the uninterrupted evaluation.
    reference = _episodes(sessions, reference_sub.evaluation_id)
    assert {k: r.trace_hash for k, r in resumed.items()} == {k: r.trace_hash for k, r in reference.items()}
    assert (
        evaluation(sessions, sub.evaluation_id).score_public
        == evaluation(sessions, reference_sub.evaluation_id).score_public
    )
    assert evaluation(sessions, sub.evaluation_id).attempts == 2


@pytest.mark.parametrize(
    ("policy", "category", "fragment"),
    [
        ("crash", "crash", "scenario 'lab-300' episode"),
        ("invalid_action", "invalid_action", "step"),
        ("import_error", "import_error", "scenario 'lab-300' episode"),
    ],
    ids=["crash", "invalid-action", "import-error"],
)
def test_participant_failures_end_the_evaluation_with_a_reason(
    settings: Settings, sessions: sessionmaker[Session], submit: Any, policy: str, category: str, fragment: str
) -> None:
    sub: Submitted = submit(policy)
    assert _run(settings, sessions, sub.evaluation_id).state == "failed"
    done = evaluation(sessions, sub.evaluation_id)
    assert done.error_category == category
    assert fragment in (done.error_message or "")
    assert done.infrastructure_failure is False
    with sessions() as session:
        assert storage.load_submission(session=session, submission_id=sub.submission_id).counts_against_quota


def test_redelivered_message_for_a_finished_evaluation_does_nothing(
    settings: Settings, sessions: sessionmaker[Session], submit: Any
) -> None:
    sub: Submitted = submit("greedy")
    _run(settings, sessions, sub.evaluation_id)
    before = _episodes(sessions, sub.evaluation_id)
    report = _run(settings, sessions, sub.evaluation_id, worker="w9")
    assert (report.state, report.episodes_run) == ("succeeded", 0)
    after = _episodes(sessions, sub.evaluation_id)
    assert {k: r.id for k, r in before.items()} == {k: r.id for k, r in after.items()}


def test_missing_bundle_is_the_services_fault(settings: Settings, sessions: sessionmaker[Session], submit: Any) -> None:
    sub: Submitted = submit("greedy")
    for path in settings.bundle_dir.rglob("*"):
        if path.is_file():
            path.chmod(0o644)
            path.unlink()
    with pytest.raises(RetryableError, match=f"bundle {sub.bundle_sha256} of submission {sub.submission_id}"):
        _run(settings, sessions, sub.evaluation_id)


def test_audit_reproduces_the_evaluation_and_reports_tampering(
    settings: Settings, sessions: sessionmaker[Session], submit: Any
) -> None:
    sub: Submitted = submit("greedy")
    _run(settings, sessions, sub.evaluation_id)
    with sessions() as session:
        audit = storage.create_audit(
            session=session, submission_id=sub.submission_id, sample=None, actor=organiser(session)
        )
    assert _run(settings, sessions, audit.id).message == "match"
    verdict = evaluation(sessions, audit.id).audit
    assert verdict == {"verdict": "match", "mismatches": [], "public_mismatches": [], "episodes": 6}

    with sessions() as session:  # someone edits a stored result: the next audit must say where and what
        row = (
            session.query(EpisodeResult)
            .filter_by(evaluation_id=sub.evaluation_id, scenario="lab-300", episode_id="seed0")
            .one()
        )
        row.metrics = {**(row.metrics or {}), "mean_completion": 1.0}
        session.commit()
        sampled = storage.create_audit(
            session=session, submission_id=sub.submission_id, sample=None, actor=organiser(session)
        )
    assert _run(settings, sessions, sampled.id).message == "mismatch"
    verdict = evaluation(sessions, sampled.id).audit
    assert verdict is not None
    mismatches = verdict["mismatches"]
    assert len(mismatches) == 1 and mismatches[0].startswith("lab-300/seed0: mean_completion 1.0 -> ")
    assert verdict["public_mismatches"] == mismatches  # an unkeyed episode: its owner may read the metrics


def test_audit_of_a_sample_runs_only_that_many_episodes(
    settings: Settings, sessions: sessionmaker[Session], submit: Any
) -> None:
    sub: Submitted = submit("greedy")
    _run(settings, sessions, sub.evaluation_id)
    with sessions() as session:
        audit = storage.create_audit(
            session=session, submission_id=sub.submission_id, sample=2, actor=organiser(session)
        )
    report = _run(settings, sessions, audit.id)
    assert (report.state, report.episodes_run, report.message) == ("succeeded", 2, "match")
