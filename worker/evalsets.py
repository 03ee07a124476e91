"""Registering an evaluation set with the service, and scoring the six baselines on it once.

The baselines run in-process on the trusted simulator (they are our code, not untrusted), are cached on disk by
(commitment, simulator version) by ``score_baselines``, and land in ``baseline_results`` as the leaderboard's
reference rows. Greedy's row is 1.0 by construction: every score is a ratio to it.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.models import EvalSet as EvalSetRow
from layersched.sim.evalset import EvalSet, load_evalset, score_baselines
from layersched.sim.version import SIM_VERSION
from layersched.worker.pipeline import split_score


def register_evalset_file(*, session: Session, path: Path, cache_dir: Path, current: bool = True) -> EvalSetRow:
    """Load and validate ``path``, register it (current for new submissions), and score the baselines on it."""
    evalset = load_evalset(path)
    public = evalset.public_view()
    scenarios = [
        {"name": sc.name, "weight": sc.weight, "public_episodes": sum(ep.split == "public" for ep in sc.episodes)}
        for sc in evalset.scenarios
    ]
    row = storage.register_evalset(
        session=session,
        name=evalset.name,
        commitment=public["commitment"],
        path=str(Path(path).resolve()),
        scenarios=scenarios,
        current=current,
    )
    score_reference_rows(session=session, evalset=evalset, cache_dir=cache_dir)
    return row


def score_reference_rows(*, session: Session, evalset: EvalSet, cache_dir: Path) -> None:
    """Upsert one ``baseline_results`` row per baseline with its public and private scores."""
    records = score_baselines(evalset, cache_dir)
    greedy = {(r.scenario, r.episode): r.mean_completion for r in records["Greedy"]}
    for name, recs in records.items():
        means = {(r.scenario, r.episode): r.mean_completion for r in recs}
        storage.upsert_baseline_result(
            session=session,
            evalset_commitment=evalset.commitment,
            sim_version=SIM_VERSION,
            baseline=name,
            score_public=split_score(evalset, means, greedy, "public"),
            score_private=split_score(evalset, means, greedy, "private"),
            per_scenario={sc.name: [m for (s, _), m in means.items() if s == sc.name] for sc in evalset.scenarios},
        )
