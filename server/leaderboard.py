"""Ranking: each participant's selected (else best) scored submission, with baseline reference rows.

Lower scores are better (a score is the geometric mean of per-scenario ratios to Greedy); ties go to the earlier
submission. A frozen leaderboard serves the public ranking kept at freeze time, while evaluations go on. The private
split is shown only once organisers publish it (organisers may always look).
"""

from __future__ import annotations

import math
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy import Engine, event
from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.errors import Forbidden
from layersched.server.models import BaselineResult, LeaderboardState, User
from layersched.server.schemas import Leaderboard, LeaderboardRow
from layersched.sim.scoring import ladder

Split = Literal["public", "private"]


def _score(raw: dict[str, Any] | None) -> dict[str, Any] | None:
    if not raw or raw.get("overall") is None:
        return None
    return raw


def build_leaderboard(*, session: Session, split: Split, ladder_step: float | None = None) -> Leaderboard:
    """The live ranking of ``split`` on the current evaluation set (ignores freezing and publishing).

    With ``ladder_step`` (organisers' option, public split only) each participant's row is the last submission whose
    score the Ladder revealed: a new public score shows only when it beats the best shown by more than the step.
    """
    evalset = storage.get_current_evalset(session=session)
    evalset_name = evalset.name if evalset else None
    counts = storage.count_submissions_by_owner(session=session)

    entries = storage.leaderboard_entries(session=session, split=split, evalset_name=evalset_name)
    best: dict[int, storage.ScoredEntry] = {}
    if ladder_step is not None and split == "public":
        best = _laddered(entries, ladder_step)
    else:
        for entry in entries:
            held = best.get(entry.owner_id)
            if held is None or _better(entry, held):
                best[entry.owner_id] = entry
    ranked = sorted(best.values(), key=lambda e: (e.overall, e.created_at, e.submission_id))
    scores = storage.evaluation_scores(session=session, split=split, evaluation_ids=[e.evaluation_id for e in ranked])
    rows = []
    for i, entry in enumerate(ranked, start=1):
        score = scores[entry.evaluation_id]
        rows.append(
            LeaderboardRow(
                rank=i,
                participant=entry.owner_name,
                submission_id=entry.submission_id,
                submission_name=entry.name,
                score=entry.overall,
                ci_low=score.get("ci_low", entry.overall),
                ci_high=score.get("ci_high", entry.overall),
                per_scenario=score.get("per_scenario", {}),
                submissions=counts.get(entry.owner_id, 0),
                submitted_at=entry.created_at,
                baseline=False,
            )
        )
    if evalset is not None:
        # One row per baseline: the newest (a simulator release re-scores them under a new version).
        latest: dict[str, BaselineResult] = {}
        for result in storage.list_baseline_results(session=session, evalset_commitment=evalset.commitment):
            if result.baseline not in latest or result.created_at > latest[result.baseline].created_at:
                latest[result.baseline] = result
        for baseline in latest.values():
            reference = _score(baseline.score_public if split == "public" else baseline.score_private)
            if reference is None:
                continue
            rows.append(
                LeaderboardRow(
                    rank=None,
                    participant=baseline.baseline,
                    submission_id=None,
                    submission_name=f"baseline {baseline.baseline} (sim {baseline.sim_version})",
                    score=reference["overall"],
                    ci_low=reference.get("ci_low", reference["overall"]),
                    ci_high=reference.get("ci_high", reference["overall"]),
                    per_scenario=reference.get("per_scenario", {}),
                    submissions=0,
                    submitted_at=baseline.created_at,
                    baseline=True,
                )
            )
    # Baselines are reference lines among the participants, so the table is sorted by score throughout.
    rows.sort(key=lambda r: (r.score, r.baseline, r.submitted_at))
    state = storage.get_leaderboard_state(session=session)
    return Leaderboard(split=split, frozen=state.frozen, published=state.private_published, rows=rows)


def _laddered(entries: list[storage.ScoredEntry], step: float) -> dict[int, storage.ScoredEntry]:
    """Per participant, in submission order, the last entry the Ladder (``scoring.ladder``) chose to reveal."""
    shown: dict[int, storage.ScoredEntry] = {}
    for entry in sorted(entries, key=lambda e: (e.created_at, e.submission_id)):
        held = shown.get(entry.owner_id)
        if ladder(held.overall if held else None, entry.overall, step).show:
            shown[entry.owner_id] = entry
    return shown


def _better(candidate: storage.ScoredEntry, held: storage.ScoredEntry) -> bool:
    """A participant's selected submission wins; else the lower score, then the earlier submission."""
    if candidate.selected != held.selected:
        return bool(candidate.selected)
    return (candidate.overall, candidate.created_at, candidate.submission_id) < (
        held.overall,
        held.created_at,
        held.submission_id,
    )


def snapshot(*, session: Session) -> dict[str, Any]:
    """Both splits as they stand, for freezing."""
    return {
        split: build_leaderboard(session=session, split=split).model_dump(mode="json")
        for split in ("public", "private")
    }


def visible_leaderboard(*, session: Session, split: Split, viewer: User | None, fresh: bool = False) -> Leaderboard:
    """What ``viewer`` (None: anonymous) may see of ``split``: frozen snapshot, publication rule applied.

    ``fresh`` checks the cached board against the database whatever its age (a submission's own page must show its
    rank as soon as it shows ``succeeded``).
    """
    return _visible(session=session, split=split, viewer=viewer, fresh=fresh).board


def visible_leaderboard_json(*, session: Session, split: Split, viewer: User | None) -> bytes:
    """:func:`visible_leaderboard` as the JSON body of the API (serialised once per version of the board)."""
    entry = _visible(session=session, split=split, viewer=viewer)
    if entry.body is None:
        entry.body = entry.board.model_dump_json().encode()
    return entry.body


# ------------------------------------------------------------------------------------------------------ the cache
#
# Every status read and every leaderboard view needs the board. Building it reads every scored submission (250 ms with
# 10,000 on the test machine, 1.4 s before storage.leaderboard_entries), so each engine keeps the boards it built
# with the key they were built under: the leaderboard state and storage.leaderboard_fingerprint (one aggregate
# query, about 8 ms). A board is served without any query while no commit happened in this process since it was
# checked and it was checked less than ``max_age_s`` ago; writes from other processes (the worker's results) show
# within ``max_age_s`` (Settings.leaderboard_cache_s). With ``max_age_s`` 0 the key is checked on every read.


@dataclass
class _Entry:
    key: tuple[Any, ...]
    board: Leaderboard
    commits: int = -1
    checked: float = -math.inf
    body: bytes | None = None


@dataclass
class _EngineCache:
    max_age_s: float = 0.0
    ladder_step: float | None = None
    entries: dict[str, _Entry] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


_CACHES: weakref.WeakKeyDictionary[Engine, _EngineCache] = weakref.WeakKeyDictionary()
_commits = 0


@event.listens_for(Engine, "commit")
def _count_commit(_connection: Any) -> None:
    global _commits
    _commits += 1


def configure_cache(engine: Engine, *, max_age_s: float, ladder_step: float | None = None) -> None:
    """Serve this engine's boards for up to ``max_age_s`` before checking for other processes' writes; build
    the public board with the Ladder when ``ladder_step`` is set."""
    cache = _CACHES.setdefault(engine, _EngineCache())
    if cache.ladder_step != ladder_step:
        cache.entries.clear()
    cache.max_age_s, cache.ladder_step = max_age_s, ladder_step


def _visible(*, session: Session, split: Split, viewer: User | None, fresh: bool = False) -> _Entry:
    bind = session.get_bind()
    engine = bind if isinstance(bind, Engine) else bind.engine
    cache = _CACHES.setdefault(engine, _EngineCache())
    entry = cache.entries.get(split)
    now, commits = time.monotonic(), _commits  # read first: a commit during the checks makes the next read check
    if entry is None or entry.commits != commits or fresh:
        with cache.lock:  # this process wrote: every reader waits for the check (read-your-writes)
            entry = _check(session=session, split=split, cache=cache, commits=commits, now=now)
    elif now - entry.checked >= cache.max_age_s and cache.lock.acquire(blocking=False):
        # Only age: one request checks, the others keep serving the current board meanwhile (no stampede of
        # checks under load, which cost 250 ms at p99 with 200 requests/s).
        try:
            entry = _check(session=session, split=split, cache=cache, commits=commits, now=now)
        finally:
            cache.lock.release()
    organiser = viewer is not None and viewer.role == "organiser"
    if split == "private" and not entry.board.published and not organiser:
        raise Forbidden("the private leaderboard is not published yet")
    return entry


def _check(*, session: Session, split: Split, cache: _EngineCache, commits: int, now: float) -> _Entry:
    state = storage.get_leaderboard_state(session=session)
    key = (state.frozen, state.frozen_at, state.private_published, storage.leaderboard_fingerprint(session=session))
    entry = cache.entries.get(split)
    if entry is None or entry.key != key:
        entry = _Entry(key, _board(session=session, split=split, state=state, ladder_step=cache.ladder_step))
        cache.entries[split] = entry
    entry.commits, entry.checked = commits, now
    return entry


def _board(*, session: Session, split: Split, state: LeaderboardState, ladder_step: float | None) -> Leaderboard:
    if state.frozen and state.snapshot and split == "public":
        board = Leaderboard.model_validate(state.snapshot["public"])
        return board.model_copy(update={"frozen": True, "published": state.private_published})
    return build_leaderboard(session=session, split=split, ladder_step=ladder_step)


def rank_of(board: Leaderboard, submission_id: int) -> int | None:
    for row in board.rows:
        if row.submission_id == submission_id:
            rank: int | None = row.rank
            return rank
    return None
