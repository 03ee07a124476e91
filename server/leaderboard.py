"""Ranking: each participant's selected (else best) scored submission, with baseline reference rows.

Lower scores are better (a score is the geometric mean of per-scenario ratios to Greedy); ties go to the earlier
submission. A frozen leaderboard serves the public ranking kept at freeze time, while evaluations go on. The private
split is shown only once organisers publish it (organisers may always look).
"""

from __future__ import annotations

from typing import Any, Literal

from layersched.server import storage
from layersched.server.errors import Forbidden
from layersched.server.models import BaselineResult, Submission, User
from layersched.server.schemas import Leaderboard, LeaderboardRow
from sqlalchemy.orm import Session

Split = Literal["public", "private"]


def _score(raw: dict[str, Any] | None) -> dict[str, Any] | None:
    if not raw or raw.get("overall") is None:
        return None
    return raw


def build_leaderboard(*, session: Session, split: Split) -> Leaderboard:
    """The live ranking of ``split`` on the current evaluation set (ignores freezing and publishing)."""
    state = storage.get_leaderboard_state(session=session)
    evalset = storage.get_current_evalset(session=session)
    evalset_name = evalset.name if evalset else None
    counts = storage.count_submissions_by_owner(session=session)

    entries: dict[int, tuple[Submission, dict[str, Any]]] = {}
    for submission in storage.leaderboard_submissions(session=session):
        evaluation = storage.scored_evaluation(submission, evalset_name=evalset_name)
        score = (
            _score(evaluation.score_public if split == "public" else evaluation.score_private) if evaluation else None
        )
        if score is None:
            continue
        held = entries.get(submission.owner_id)
        if held is None or _better(submission, score, *held):
            entries[submission.owner_id] = (submission, score)

    ranked = sorted(entries.values(), key=lambda e: (e[1]["overall"], e[0].created_at, e[0].id))
    rows = [
        LeaderboardRow(
            rank=i,
            participant=submission.owner.name,
            submission_id=submission.id,
            submission_name=submission.name,
            score=score["overall"],
            ci_low=score.get("ci_low", score["overall"]),
            ci_high=score.get("ci_high", score["overall"]),
            per_scenario=score.get("per_scenario", {}),
            submissions=counts.get(submission.owner_id, 0),
            submitted_at=submission.created_at,
            baseline=False,
        )
        for i, (submission, score) in enumerate(ranked, start=1)
    ]
    if evalset is not None:
        # One row per baseline: the newest (a simulator release re-scores them under a new version).
        latest: dict[str, BaselineResult] = {}
        for result in storage.list_baseline_results(session=session, evalset_commitment=evalset.commitment):
            if result.baseline not in latest or result.created_at > latest[result.baseline].created_at:
                latest[result.baseline] = result
        for baseline in latest.values():
            score = _score(baseline.score_public if split == "public" else baseline.score_private)
            if score is None:
                continue
            rows.append(
                LeaderboardRow(
                    rank=None,
                    participant=baseline.baseline,
                    submission_id=None,
                    submission_name=f"baseline {baseline.baseline} (sim {baseline.sim_version})",
                    score=score["overall"],
                    ci_low=score.get("ci_low", score["overall"]),
                    ci_high=score.get("ci_high", score["overall"]),
                    per_scenario=score.get("per_scenario", {}),
                    submissions=0,
                    submitted_at=baseline.created_at,
                    baseline=True,
                )
            )
    # Baselines are reference lines among the participants, so the table is sorted by score throughout.
    rows.sort(key=lambda r: (r.score, r.baseline, r.submitted_at))
    return Leaderboard(split=split, frozen=state.frozen, published=state.private_published, rows=rows)


def _better(candidate: Submission, score: dict[str, Any], held: Submission, held_score: dict[str, Any]) -> bool:
    if candidate.selected != held.selected:
        return bool(candidate.selected)
    mine: tuple[float, Any, int] = (float(score["overall"]), candidate.created_at, candidate.id)
    theirs: tuple[float, Any, int] = (float(held_score["overall"]), held.created_at, held.id)
    return mine < theirs


def snapshot(*, session: Session) -> dict[str, Any]:
    """Both splits as they stand, for freezing."""
    return {
        split: build_leaderboard(session=session, split=split).model_dump(mode="json")
        for split in ("public", "private")
    }


def visible_leaderboard(*, session: Session, split: Split, viewer: User | None) -> Leaderboard:
    """What ``viewer`` (None: anonymous) may see of ``split``: frozen snapshot, publication rule applied."""
    state = storage.get_leaderboard_state(session=session)
    organiser = viewer is not None and viewer.role == "organiser"
    if split == "private" and not state.private_published and not organiser:
        raise Forbidden("the private leaderboard is not published yet")
    if state.frozen and state.snapshot and split == "public":
        board = Leaderboard.model_validate(state.snapshot["public"])
        return board.model_copy(update={"frozen": True, "published": state.private_published})
    return build_leaderboard(session=session, split=split)


def rank_of(board: Leaderboard, submission_id: int) -> int | None:
    for row in board.rows:
        if row.submission_id == submission_id:
            rank: int | None = row.rank
            return rank
    return None
