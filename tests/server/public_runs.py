"""An evaluation recorded as the worker records it, without a sandbox: a baseline plays a set's episodes
in-process (the in-process run is the sandboxed run: the tracks' tests check it) and each episode is written with
``worker.replays.PublicEpisodes``'s replay input and the pipeline's scores. The pages' tests read what this writes."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.models import EvalSet, Submission, User
from layersched.sim.episodes import policy_seed, trace_hash
from layersched.sim.evalset import EvalSet as SimEvalSet
from layersched.sim.evalset import load_evalset
from layersched.sim.tracks import get_track
from layersched.worker.pipeline import reference_values, split_score
from layersched.worker.replays import PublicEpisodes


def register(session: Session, path: Path, *, current: bool = True) -> tuple[EvalSet, SimEvalSet]:
    evalset = load_evalset(path)
    scenarios = [
        {"name": sc.name, "weight": sc.weight, "public_episodes": sum(ep.split == "public" for ep in sc.episodes)}
        for sc in evalset.scenarios
    ]
    row = storage.register_evalset(
        session=session,
        name=evalset.name,
        commitment=evalset.commitment,
        path=str(path),
        scenarios=scenarios,
        track=evalset.track,
        current=current,
    )
    return row, evalset


def submission(session: Session, owner: User, evalset: EvalSet, name: str) -> tuple[Submission, int]:
    """A submission of ``owner`` to the phase on ``evalset`` and its queued evaluation's id."""
    from .test_browser import add_submission

    made, evaluation = add_submission(session, owner, evalset, name)
    return made, evaluation.id


def evaluate(
    session: Session,
    evaluation_id: int,
    evalset: SimEvalSet,
    policy: Any,
    *,
    bundle_sha256: str,
    cache_dir: Path,
) -> dict[tuple[str, str], tuple[int, ...]]:
    """Play ``policy`` on every episode of ``evalset`` and record each as the worker does; returns each episode's
    accepted actions."""
    track = get_track(evalset.track)
    storage.start_evaluation(
        session=session,
        evaluation_id=evaluation_id,
        worker_id="w1",
        total=len(evalset.jobs()),
        sim_version="1.0.0",
        image_digest=None,
        sandbox="process",
    )
    public = PublicEpisodes(evalset, cache_dir)
    played: dict[tuple[str, str], tuple[int, ...]] = {}
    for job in evalset.jobs():
        rng = random.Random(policy_seed(bundle_sha256, track.scenario_hash(job.scenario), job.episode.id))
        run = track.run_episode(job.scenario, policy, job.episode.workload_rng(), rng)
        played[(job.scenario_name, job.episode.id)] = tuple(run.actions)
        values = {spec.name: float(getattr(run.metrics, spec.name)) for spec in track.metric_specs}
        storage.record_episode_result(
            session=session,
            evaluation_id=evaluation_id,
            scenario=job.scenario_name,
            episode_id=job.episode.id,
            split=job.episode.split,
            hidden=job.episode.hidden,
            status="ok",
            metrics=values,
            primary_value=values[track.primary_metric],
            trace_hash=trace_hash(run.actions),
            n_actions=len(run.actions),
            replay=public.replay_input(
                job, tuple(run.actions), lambda trace: storage.trace_kept(session=session, trace_hash=trace)
            ),
        )
    episodes = storage.get_evaluation(session=session, evaluation_id=evaluation_id).episodes
    values = {(e.scenario, e.episode_id): e.primary_value for e in episodes if e.primary_value is not None}
    metrics = {(e.scenario, e.episode_id): e.metrics for e in episodes if e.metrics is not None}
    reference = reference_values(evalset, cache_dir)
    storage.finish_evaluation(
        session=session,
        evaluation_id=evaluation_id,
        state="succeeded",
        score_public=split_score(evalset, values, reference, "public", metrics),
        score_private=split_score(evalset, values, reference, "private", metrics),
    )
    return played
