"""Registering an evaluation set with the service, and scoring the six baselines on it once.

The baselines run in-process on the trusted simulator (they are our code, not untrusted), are cached on disk by
(commitment, simulator version) by ``score_baselines``, and land in ``baseline_results`` as the leaderboard's
reference rows. The row of the set's track's reference baseline is 1.0 by construction: every score is a ratio to
it.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.orm import Session

from layersched.server import admin, storage
from layersched.server.config import Settings
from layersched.server.db import make_engine, make_sessionmaker, session_scope
from layersched.sim.evalset import EpisodeRecord, EvalSet, load_evalset, score_baselines
from layersched.sim.ordered_pool import Progress
from layersched.sim.tracks import get_track
from layersched.sim.version import SIM_VERSION
from layersched.worker.pipeline import episode_values, split_score


def register_and_score(
    *,
    path: Path,
    settings: Settings,
    current: bool = True,
    workers: int = 1,
    progress: Progress | None = None,
) -> admin.RegisteredEvalSet:
    """Register the set at ``path`` (current for new submissions) and write the baselines' reference rows.

    ``workers`` processes share the episodes when the rows are not cached yet; ``progress(done, total)`` hears of each.
    """
    registered = admin.register_evalset(path=path.resolve(), current=current, settings=settings)
    evalset = load_evalset(path)
    # Scored before the database session opens: the session would otherwise sit idle in a transaction for as long.
    records = score_baselines(evalset, settings.baseline_cache_dir, workers=workers, progress=progress)
    engine = make_engine(settings.database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            write_reference_rows(session=session, evalset=evalset, records=records)
    finally:
        engine.dispose()
    return registered


def write_reference_rows(*, session: Session, evalset: EvalSet, records: dict[str, list[EpisodeRecord]]) -> None:
    """Upsert one ``baseline_results`` row per baseline with its public and private scores."""
    reference = episode_values(records[get_track(evalset.track).reference_baseline])
    for name, recs in records.items():
        values = episode_values(recs)
        metrics = {(r.scenario, r.episode): r.metrics for r in recs}
        storage.upsert_baseline_result(
            session=session,
            evalset_commitment=evalset.commitment,
            sim_version=SIM_VERSION,
            baseline=name,
            score_public=split_score(evalset, values, reference, "public", metrics),
            score_private=split_score(evalset, values, reference, "private", metrics),
            per_scenario={sc.name: [v for (s, _), v in values.items() if s == sc.name] for sc in evalset.scenarios},
        )
