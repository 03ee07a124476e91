"""The reference baselines' scores, one row per (evaluation-set commitment, simulator version, baseline)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from layersched.server.models import BaselineResult, utcnow


def upsert_baseline_result(
    *,
    session: Session,
    evalset_commitment: str,
    sim_version: str,
    baseline: str,
    score_public: dict[str, Any] | None,
    score_private: dict[str, Any] | None,
    per_scenario: dict[str, Any] | None = None,
    now: dt.datetime | None = None,
) -> BaselineResult:
    """Cache a baseline's scores on one evaluation set and simulator version (replacing an earlier row)."""
    row = session.scalar(
        select(BaselineResult).where(
            BaselineResult.evalset_commitment == evalset_commitment,
            BaselineResult.sim_version == sim_version,
            BaselineResult.baseline == baseline,
        )
    )
    if row is None:
        row = BaselineResult(evalset_commitment=evalset_commitment, sim_version=sim_version, baseline=baseline)
        session.add(row)
    row.score_public, row.score_private = score_public, score_private
    row.per_scenario = per_scenario or {}
    row.created_at = now or utcnow()
    session.commit()
    return row


def get_baseline_result(
    *, session: Session, evalset_commitment: str, sim_version: str, baseline: str
) -> BaselineResult | None:
    return session.scalar(
        select(BaselineResult).where(
            BaselineResult.evalset_commitment == evalset_commitment,
            BaselineResult.sim_version == sim_version,
            BaselineResult.baseline == baseline,
        )
    )


def list_baseline_results(*, session: Session, evalset_commitment: str) -> list[BaselineResult]:
    return list(
        session.scalars(
            select(BaselineResult)
            .where(BaselineResult.evalset_commitment == evalset_commitment)
            .order_by(BaselineResult.baseline, BaselineResult.created_at)
        )
    )
