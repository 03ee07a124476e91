"""One evaluation, start to finish: the plain functions behind the Celery tasks.

``run_evaluation`` takes an evaluation id, re-reads everything from the database (the source of truth), runs the
episodes that are not recorded yet in one sandbox, writes each episode's result as soon as it is known (an upsert,
so a redelivered task never duplicates a row), and ends the evaluation with its scores or with a reason.

A worker killed half-way leaves a ``running`` evaluation with some episodes written; the reconciler
(``layersched.worker.reconcile``) puts it back in the queue and the next worker resumes where it stopped. Because the
policy's rng and every global seed are derived from (bundle, scenario, episode), a resumed evaluation produces
exactly the actions an uninterrupted one would have.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from layersched.server import storage
from layersched.server.bundles import bundle_path, unpack_bundle
from layersched.server.config import Settings
from layersched.server.errors import InvalidBundle
from layersched.server.models import EpisodeResult, Evaluation
from layersched.server.models import EvalSet as EvalSetRow
from layersched.server.visibility import hidden_episode_message
from layersched.sim.episodes import policy_seed
from layersched.sim.errors import SimError
from layersched.sim.evalset import EpisodeRecord, EvalJob, EvalSet, load_evalset, score_baselines
from layersched.sim.scoring import ScenarioEpisodes, bootstrap_interval, pair_episodes, score
from layersched.sim.tracks import get_track
from layersched.sim.version import SIM_VERSION
from layersched.worker.replays import PublicEpisodes
from layersched.worker.sandbox.choice import choose_sandbox
from layersched.worker.sandbox.limits import SandboxLimits
from layersched.worker.sandbox.outcomes import EpisodeJob, EpisodeOutcome, SandboxError
from layersched.worker.sandbox.runner import SandboxSession, open_sandbox

log = logging.getLogger(__name__)

INFRASTRUCTURE_STATUS = "infrastructure_error"

OpenSandbox = Callable[..., SandboxSession]


class RetryableError(Exception):
    """The service failed in a way another attempt may not (engine down, bundle store unreadable)."""


@dataclass(frozen=True)
class EvaluationReport:
    """What ``run_evaluation`` did, for logs and tests."""

    evaluation_id: int
    state: str
    episodes_run: int
    message: str = ""


def choose_backend(settings: Settings) -> str:
    """``docker`` when configured or when it is usable (``auto``), else the weaker ``process`` sandbox."""
    choice = choose_sandbox(settings)
    if choice.backend == "process" and settings.sandbox_backend == "auto":
        log.warning("%s", choice.describe())
    return choice.backend


def sandbox_limits(settings: Settings) -> SandboxLimits:
    return SandboxLimits(
        decision_seconds=settings.decision_seconds,
        episode_seconds=settings.episode_seconds,
        submission_seconds=settings.submission_seconds,
        startup_seconds=settings.startup_seconds,
        memory_bytes=settings.sandbox_memory_mb * 1024 * 1024,
        poll_seconds=settings.sandbox_poll_us * 1e-6,
        bundle_bytes=settings.max_unpacked_bytes,
        bundle_files=settings.max_files,
    )


def load_registered_evalset(session: Session, evaluation: Evaluation) -> EvalSet:
    """The evaluation set of ``evaluation``, checked against the commitment recorded when it was queued."""
    row = session.query(EvalSetRow).filter_by(name=evaluation.evalset_name).one_or_none()
    if row is None:
        raise RetryableError(f"evaluation set {evaluation.evalset_name!r} is not registered")
    try:
        evalset = load_evalset(row.path)
    except SimError as exc:
        raise RetryableError(f"evaluation set {evaluation.evalset_name!r} cannot be loaded: {exc}") from exc
    if evalset.commitment != evaluation.evalset_commitment:
        raise RetryableError(
            f"evaluation set {evaluation.evalset_name!r} at {row.path} has commitment {evalset.commitment}, "
            f"but the evaluation was queued against {evaluation.evalset_commitment}: the file changed"
        )
    return evalset


def isolation_order(jobs: Sequence[EvalJob]) -> list[EvalJob]:
    """The order episodes run in: unkeyed (their workload is public) first, then hidden public-split ones, then
    hidden private-split ones; within each group the set's order.

    What a participant can read of an evaluation (an unkeyed episode's output and messages, the public score)
    then comes only from episodes that ran before any episode it must not learn about. However a policy might carry
    something from one episode to the next, nothing of the private workload can reach its author before the end.
    """
    return sorted(jobs, key=lambda job: (job.episode.hidden, job.episode.split == "private"))


def participant_message(job: EvalJob, outcome: EpisodeOutcome) -> str:
    """What the participant may read of how an episode ended: for a hidden episode only its status and step (the
    message may quote text the policy wrote about the hidden workload); organisers read ``outcome.message``."""
    if not job.episode.hidden:
        return outcome.message
    return hidden_episode_message(outcome.status, outcome.step)


def select_jobs(session: Session, evaluation: Evaluation, evalset: EvalSet) -> list[EvalJob]:
    """Every episode for initial runs and reruns; for audits, the audited episodes or a seeded sample of them; in
    ``isolation_order``."""
    jobs = evalset.jobs()
    if evaluation.kind != "audit" or evaluation.audit_of_id is None:
        return isolation_order(jobs)
    audited = {
        (r.scenario, r.episode_id) for r in session.query(EpisodeResult).filter_by(evaluation_id=evaluation.audit_of_id)
    }
    jobs = [j for j in jobs if (j.scenario_name, j.episode.id) in audited]
    if evaluation.audit_sample and evaluation.audit_sample < len(jobs):
        # Seeded by the audit's id: the sample is reproducible, and the participant cannot know it in advance.
        jobs = sorted(random.Random(evaluation.id).sample(jobs, evaluation.audit_sample), key=jobs.index)
    return isolation_order(jobs)


def _job_for(evaluation: Evaluation, job: EvalJob) -> EpisodeJob:
    seed = policy_seed(
        evaluation.submission.bundle_sha256, get_track(job.track).scenario_hash(job.scenario), job.episode.id
    )
    return EpisodeJob(job.scenario_name, job.scenario, job.episode, seed, track=job.track)


def _record(
    session: Session, evaluation_id: int, job: EvalJob, outcome: EpisodeOutcome, public: PublicEpisodes
) -> None:
    record = outcome.metrics
    track = get_track(job.track)
    metrics = None if record is None else {spec.name: float(getattr(record, spec.name)) for spec in track.metric_specs}
    storage.record_episode_result(
        session=session,
        evaluation_id=evaluation_id,
        scenario=job.scenario_name,
        episode_id=job.episode.id,
        split=job.episode.split,
        hidden=job.episode.hidden,
        status=outcome.status,
        step=outcome.step,
        message=outcome.message,
        metrics=metrics,
        primary_value=None if record is None else float(getattr(record, track.primary_metric)),
        trace_hash=outcome.trace_hash,
        n_actions=outcome.n_actions,
        stdout=outcome.stdout,
        stderr=outcome.stderr,
        replay=public.replay_input(
            job, outcome.actions, lambda trace: storage.trace_kept(session=session, trace_hash=trace)
        ),
    )


def split_score(
    evalset: EvalSet,
    values: dict[tuple[str, str], float],
    reference: dict[tuple[str, str], float],
    split: str,
    metrics: dict[tuple[str, str], dict[str, float]] | None = None,
) -> dict[str, Any] | None:
    """Score of one leaderboard split with its 95% bootstrap interval, or None if the split has no episodes.

    ``values`` and ``reference`` (the track's reference baseline's) map (scenario, episode id) to the episode's
    primary metric. ``metrics`` (each episode's every metric) adds ``"metrics"``: each metric's mean over the
    split's episodes, the board's secondary columns (an aggregate of the split, as the score is).
    """
    keys = {(job.scenario_name, job.episode.id) for job in evalset.jobs(split)}  # type: ignore[arg-type]
    if not keys:
        return None
    # pair_episodes refuses a policy result missing for any of these episodes, instead of scoring on fewer.
    policy = {k: v for k, v in values.items() if k in keys}
    scenarios: list[ScenarioEpisodes] = pair_episodes(evalset.weights, policy, {k: reference[k] for k in keys})
    result = score(scenarios)
    low, high = bootstrap_interval(scenarios)
    out: dict[str, Any] = {"overall": result.overall, "ci_low": low, "ci_high": high, "per_scenario": result.ratios}
    if metrics is not None:
        out["metrics"] = split_means([metrics[k] for k in sorted(keys) if k in metrics])
    return out


def split_means(episodes: Sequence[dict[str, float]]) -> dict[str, float]:
    """Each metric's mean over ``episodes`` (a metric some episode lacks is left out)."""
    names = set.intersection(*(set(m) for m in episodes)) if episodes else set()
    return {name: sum(m[name] for m in episodes) / len(episodes) for name in sorted(names)}


def reference_values(evalset: EvalSet, cache_dir: Path) -> dict[tuple[str, str], float]:
    """The track's reference baseline's primary metric on every episode of the set (computed once per set and
    simulator version)."""
    return episode_values(score_baselines(evalset, cache_dir)[get_track(evalset.track).reference_baseline])


def episode_values(records: Sequence[EpisodeRecord]) -> dict[tuple[str, str], float]:
    """(scenario, episode id) -> the episode's primary metric: what ``split_score`` takes."""
    return {(r.scenario, r.episode): r.primary for r in records}


def compare_audit(
    original: Sequence[EpisodeResult], rerun: Sequence[EpisodeResult], original_eval: Evaluation, audit_eval: Evaluation
) -> dict[str, Any]:
    """Compare an audit's episodes with the audited ones: trace hashes, metrics, simulator version, image digest.

    ``mismatches`` are for organisers; ``public_mismatches`` for the participant, naming a hidden episode that
    differs but not its metrics or trace (a metric of a hidden episode is a measurement of its workload).
    """
    mismatches: list[str] = []
    public: list[str] = []
    if original_eval.sim_version != audit_eval.sim_version:
        mismatches.append(f"simulator version {original_eval.sim_version} -> {audit_eval.sim_version}")
    if original_eval.image_digest != audit_eval.image_digest:
        mismatches.append(f"sandbox image {original_eval.image_digest} -> {audit_eval.image_digest}")
    public.extend(mismatches)
    before = {(r.scenario, r.episode_id): r for r in original}
    for row in rerun:
        old = before.get((row.scenario, row.episode_id))
        where = f"{row.scenario}/{row.episode_id}"
        if old is None:
            mismatches.append(f"{where}: not in the audited evaluation")
            public.append(mismatches[-1])
            continue
        lines = []
        if old.status != row.status:
            lines.append(f"{where}: status {old.status} -> {row.status}")
        if old.trace_hash != row.trace_hash:
            lines.append(f"{where}: action trace {old.trace_hash} -> {row.trace_hash}")
        old_metrics, new_metrics = old.metrics or {}, row.metrics or {}
        for name in sorted(set(old_metrics) | set(new_metrics)):
            if old_metrics.get(name) != new_metrics.get(name):
                lines.append(f"{where}: {name} {old_metrics.get(name)!r} -> {new_metrics.get(name)!r}")
        if old.n_actions != row.n_actions:
            lines.append(f"{where}: n_actions {old.n_actions!r} -> {row.n_actions!r}")
        mismatches.extend(lines)
        if lines:
            public.extend([f"{where}: differs (hidden episode)"] if row.hidden or old.hidden else lines)
    return {
        "verdict": "mismatch" if mismatches else "match",
        "mismatches": mismatches,
        "public_mismatches": public,
        "episodes": len(rerun),
    }


def run_evaluation(
    evaluation_id: int,
    *,
    settings: Settings,
    sessions: sessionmaker[Session],
    worker_id: str,
    open_sandbox_fn: OpenSandbox = open_sandbox,
) -> EvaluationReport:
    """Run (or resume) one evaluation. Raises ``RetryableError`` for failures of the service worth another attempt."""
    with sessions() as session:
        evaluation = session.get(Evaluation, evaluation_id)
        if evaluation is None or evaluation.state in ("succeeded", "failed", "cancelled"):
            return EvaluationReport(evaluation_id, evaluation.state if evaluation else "missing", 0, "nothing to do")
        evalset = load_registered_evalset(session, evaluation)
        jobs = select_jobs(session, evaluation, evalset)
        backend = choose_backend(settings)
        if evalset.hidden and backend == "process" and not settings.allow_process_for_hidden:
            raise RetryableError(
                f"evaluation set {evalset.name!r} is hidden and no Docker sandbox is available; the process sandbox "
                "is refused for hidden sets (set LAYERSCHED_ALLOW_PROCESS_FOR_HIDDEN=true to allow it)"
            )
        submission = evaluation.submission
        stored = bundle_path(settings.bundle_dir, submission.bundle_sha256)
        if not stored.is_file():
            raise RetryableError(f"bundle {submission.bundle_sha256} of submission {submission.id} is not in the store")
        # Taken before anything slow (unpacking, the sandbox's start and the policy's import): a copy of this
        # task that the reconciler sends meanwhile finds the evaluation running, with a fresh heartbeat, and exits.
        started = storage.start_evaluation(
            session=session,
            evaluation_id=evaluation_id,
            worker_id=worker_id,
            total=len(jobs),
            sim_version=SIM_VERSION,
            image_digest=None,
            sandbox=backend,
            live_within=dt.timedelta(seconds=settings.stuck_timeout_s),
        )
        if started is None:
            return EvaluationReport(evaluation_id, "skipped", 0, "cancelled, finished or running elsewhere")
        with tempfile.TemporaryDirectory(prefix=f"layersched-eval-{evaluation_id}-") as tmp:
            try:
                entry = unpack_bundle(
                    stored,
                    fmt=submission.bundle_format,  # type: ignore[arg-type]
                    dest=Path(tmp) / "bundle",
                    policy_arguments=get_track(evalset.track).policy_arguments,
                    max_files=settings.max_files,
                    max_unpacked_bytes=settings.max_unpacked_bytes,
                )
                sandbox = open_sandbox_fn(
                    entry.parent,
                    backend=backend,
                    limits=sandbox_limits(settings),
                    allow_process_for_hidden=settings.allow_process_for_hidden,
                    image=settings.sandbox_image if backend == "docker" else None,
                )
            except (InvalidBundle, SandboxError) as exc:
                # The upload's checks accepted this bundle, so the service failed to refuse it then: the submission
                # fails, and does not count against the participant's quota.
                message = f"the bundle cannot be run: {exc}"
                storage.finish_evaluation(
                    session=session,
                    evaluation_id=evaluation_id,
                    state="failed",
                    error_category="invalid_bundle",
                    error_message=message,
                    public_error_message=message,
                    infrastructure_failure=True,
                )
                return EvaluationReport(evaluation_id, "failed", 0, message)
            with sandbox:
                storage.record_sandbox(
                    session=session,
                    evaluation_id=evaluation_id,
                    image_digest=sandbox.image_digest,
                    sandbox=sandbox.backend,
                )
                report = _play(session, evaluation_id, jobs, evalset, sandbox, settings, worker_id)
        if evalset.hidden and backend == "docker":
            _rewarm(settings.sandbox_image)
        return report


def _rewarm(image: str) -> None:
    """After hidden episodes: every page of the image back in the page cache, so that whatever the policy's reads
    brought in (pages the host had dropped meanwhile) tells a later sandbox nothing (worker/sandbox/cache_guard.py)."""
    import docker

    from layersched.worker.sandbox.docker_backend import warm_image

    try:
        client = docker.from_env()
        try:
            warm_image(client, image)
        finally:
            client.close()
    except Exception as exc:  # the engine is away: the next evaluation's start reports it; nothing to retry here
        log.warning("could not read image %s into the page cache again: %s", image, exc)


def _play(
    session: Session,
    evaluation_id: int,
    jobs: list[EvalJob],
    evalset: EvalSet,
    sandbox: SandboxSession,
    settings: Settings,
    worker_id: str,
) -> EvaluationReport:
    evaluation = storage.get_evaluation(session=session, evaluation_id=evaluation_id)
    done = storage.recorded_episodes(session=session, evaluation_id=evaluation_id)
    public = PublicEpisodes(evalset, settings.baseline_cache_dir)
    ran = 0
    for job in jobs:
        if (job.scenario_name, job.episode.id) in done:
            continue
        if not storage.heartbeat(session=session, evaluation_id=evaluation_id, worker_id=worker_id):
            return EvaluationReport(evaluation_id, "stopped", ran, "cancelled or taken over by another worker")
        outcome = sandbox.run_episode(_job_for(evaluation, job))
        ran += 1
        if outcome.status == INFRASTRUCTURE_STATUS:
            # Not recorded: the episode did not really run, and the next attempt must run it.
            raise RetryableError(f"{job.scenario_name}/{job.episode.id}: {outcome.message}")
        _record(session, evaluation_id, job, outcome, public)
        if outcome.status != "ok":
            where = f"scenario {job.scenario_name!r} episode {job.episode.id!r}"
            message = f"{where}: {outcome.message}"
            storage.finish_evaluation(
                session=session,
                evaluation_id=evaluation_id,
                state="failed",
                error_category=outcome.status,
                error_message=message,
                public_error_message=f"{where}: {participant_message(job, outcome)}",
            )
            return EvaluationReport(evaluation_id, "failed", ran, message)
    return _conclude(session, evaluation_id, evalset, settings, ran)


def _conclude(session: Session, evaluation_id: int, evalset: EvalSet, settings: Settings, ran: int) -> EvaluationReport:
    evaluation = session.get(Evaluation, evaluation_id)
    assert evaluation is not None
    session.refresh(evaluation)
    rows = list(session.query(EpisodeResult).filter_by(evaluation_id=evaluation_id))
    if evaluation.kind == "audit" and evaluation.audit_of_id is not None:
        original_eval = session.get(Evaluation, evaluation.audit_of_id)
        assert original_eval is not None
        original = list(session.query(EpisodeResult).filter_by(evaluation_id=original_eval.id))
        verdict = compare_audit(original, rows, original_eval, evaluation)
        storage.finish_evaluation(session=session, evaluation_id=evaluation_id, state="succeeded", audit=verdict)
        return EvaluationReport(evaluation_id, "succeeded", ran, verdict["verdict"])
    reference = reference_values(evalset, settings.baseline_cache_dir)
    values = {(r.scenario, r.episode_id): r.primary_value for r in rows if r.primary_value is not None}
    metrics = {(r.scenario, r.episode_id): r.metrics for r in rows if r.metrics is not None}
    storage.finish_evaluation(
        session=session,
        evaluation_id=evaluation_id,
        state="succeeded",
        score_public=split_score(evalset, values, reference, "public", metrics),
        score_private=split_score(evalset, values, reference, "private", metrics),
    )
    return EvaluationReport(evaluation_id, "succeeded", ran)
