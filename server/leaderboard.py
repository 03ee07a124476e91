"""Ranking: each phase's public board, its final (private) board, and baseline reference rows.

Every phase has its own boards: its submissions, scored on its evaluation set, with that set's baselines, frozen and
published on its own (``LeaderboardState`` per phase). A phase whose visibility is ``organisers`` shows its boards to
organisers alone.

A row is a competitor's: a team's (its members' submissions, whoever made them, under the team's name, Kaggle's
rule for merged teams), or a participant's who competes alone. Below, "participant" means either.

The public board ranks each participant's best public score; selection plays no part in it. With the Ladder
(``Settings.public_ladder_step``) it shows instead each participant's best score the Ladder revealed, and the owner
of a submission sees its laddered public score too (:class:`PublicView`); ``server.ladder`` computes what the Ladder
shows (one Ladder per competitor a submission was made under; verdicts made once and kept, so nothing done later
changes what was shown).

The final board follows Kaggle: a participant's final score is the best *private* score among the submissions they
selected (at most ``Settings.final_submissions``), or with none selected among their that many best *public* ones.
Choosing by the private scores themselves would be selection on the hidden data that the split exists to prevent.

Lower scores are better: a score is the geometric mean of per-scenario ratios to the reference baseline of the
phase's set's track (``Track.reference_baseline``), whose row is 1.0; ties go to the earlier submission. A board says
which track it is (``Leaderboard.track``, ``track_title``, ``reference_baseline``), so that its pages and the CLI
name that reference rather than one problem's. A frozen leaderboard serves the public ranking kept at freeze time,
while evaluations go on. The private split is shown only once organisers publish it (organisers may always look),
and from then on as the snapshot taken at publication: later reruns, audits, submissions or selections cannot move
it.
"""

from __future__ import annotations

import math
import threading
import time
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy import Engine, event
from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.errors import Forbidden
from layersched.server.ladder import best_shown, revealed_scores
from layersched.server.models import BaselineResult, LeaderboardState, Phase, User
from layersched.server.ranking import by_competitor, rank_key
from layersched.server.schemas import Leaderboard, LeaderboardRow, Score
from layersched.server.storage import Competitor, ScoredEntry, Shown
from layersched.server.tracks import track_fields, with_track

Split = Literal["public", "private"]
DEFAULT_FINAL_SUBMISSIONS = 2  # Settings.final_submissions' default, for callers without settings (tests, scripts)


def _score(raw: dict[str, Any] | None) -> dict[str, Any] | None:
    if not raw or raw.get("overall") is None:
        return None
    return raw


def build_leaderboard(
    *,
    session: Session,
    phase: Phase,
    split: Split,
    ladder_step: float | None = None,
    final_submissions: int = DEFAULT_FINAL_SUBMISSIONS,
) -> Leaderboard:
    """The live ranking of ``split`` of ``phase`` (ignores freezing and publishing).

    ``ladder_step`` (organisers' option) applies the Ladder to the public split; ``final_submissions`` is how many
    selected (or, with none selected, best public) submissions of each participant the private split considers.
    """
    public = _entries(session, "public", phase)
    revealed = (
        revealed_scores(session, phase, public, ladder_step) if split == "public" and ladder_step is not None else None
    )
    return _build(session, split, phase=phase, public=public, revealed=revealed, final_submissions=final_submissions)


def _entries(session: Session, split: Split, phase: Phase) -> list[ScoredEntry]:
    entries: list[ScoredEntry] = storage.leaderboard_entries(session=session, split=split, phase=phase)
    return entries


def _build(
    session: Session,
    split: Split,
    *,
    phase: Phase,
    public: list[ScoredEntry],
    revealed: Mapping[int, Shown] | None,
    final_submissions: int,
) -> Leaderboard:
    if split == "public":
        chosen = _best_public(public, revealed)
    else:
        chosen = _final(public, _entries(session, "private", phase), final_submissions)
    rows = _participant_rows(session, split, phase, chosen.values())
    rows += _baseline_rows(session, split, phase)
    # Baselines are reference lines among the participants, so the table is sorted by score throughout.
    rows.sort(key=lambda r: (r.score, r.baseline, r.submitted_at))
    state = storage.get_leaderboard_state(session=session, phase=phase)
    return Leaderboard(
        phase=phase.name,
        split=split,
        frozen=state.frozen,
        published=state.private_published,
        rows=rows,
        **track_fields(phase.evalset.track),
    )


def _best_public(entries: list[ScoredEntry], revealed: Mapping[int, Shown] | None) -> dict[Competitor, ScoredEntry]:
    """Per competitor, the best public entry; under the Ladder (``revealed``: ``ladder.revealed_scores``), the best
    entry as its submissions show it (``ladder.best_shown``)."""
    if revealed is None:
        return {who: min(own, key=rank_key) for who, own in by_competitor(entries).items()}
    rows = {who: best_shown(own, revealed) for who, own in by_competitor(entries).items()}
    return {who: row for who, row in rows.items() if row is not None}


def _final(public: list[ScoredEntry], private: list[ScoredEntry], n: int) -> dict[Competitor, ScoredEntry]:
    """Per competitor, the private entry of their final score (see the module docstring).

    The selection counts once it holds a submission with a private score; should a competitor hold more than ``n``
    (the setting lowered after they chose, or a team whose members had each chosen before they joined), the first
    ``n`` choices count.
    """
    private_of = {entry.submission_id: entry for entry in private}
    selected = by_competitor(e for e in private if e.selected)
    final: dict[Competitor, ScoredEntry] = {}
    for who, own in by_competitor(public).items():
        chosen = sorted(selected.get(who, []), key=lambda e: (e.selected_at or e.created_at, e.submission_id))[:n]
        if not chosen:
            best = sorted(own, key=rank_key)[:n]
            chosen = [private_of[e.submission_id] for e in best if e.submission_id in private_of]
        if chosen:
            final[who] = min(chosen, key=rank_key)
    return final


def _participant_rows(
    session: Session, split: Split, phase: Phase, chosen: Iterable[ScoredEntry]
) -> list[LeaderboardRow]:
    ranked = sorted(chosen, key=rank_key)
    counts = storage.count_submissions_by_competitor(session=session, phase=phase)
    members = storage.team_members(session=session)
    scores = storage.evaluation_scores(session=session, split=split, evaluation_ids=[e.evaluation_id for e in ranked])
    rows = []
    for i, entry in enumerate(ranked, start=1):
        score = scores[entry.evaluation_id]
        rows.append(
            LeaderboardRow(
                rank=i,
                participant=entry.competitor_name,
                members=members.get(entry.competitor_id, []) if entry.competitor_kind == "team" else [],
                submission_id=entry.submission_id,
                submission_name=entry.name,
                score=entry.overall,
                ci_low=score.get("ci_low", entry.overall),
                ci_high=score.get("ci_high", entry.overall),
                per_scenario=score.get("per_scenario", {}),
                metrics=score.get("metrics", {}),
                submissions=counts.get(entry.competitor, 0),
                submitted_at=entry.created_at,
                baseline=False,
            )
        )
    return rows


def _baseline_rows(session: Session, split: Split, phase: Phase) -> list[LeaderboardRow]:
    """One row per baseline of the phase's set: the newest (a simulator release re-scores them under a new
    version)."""
    latest: dict[str, BaselineResult] = {}
    for result in storage.list_baseline_results(session=session, evalset_commitment=phase.evalset.commitment):
        if result.baseline not in latest or result.created_at > latest[result.baseline].created_at:
            latest[result.baseline] = result
    rows = []
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
                metrics=reference.get("metrics", {}),
                submissions=0,
                submitted_at=baseline.created_at,
                baseline=True,
            )
        )
    return rows


def freeze_snapshot(*, session: Session, phase: Phase) -> dict[str, Any]:
    """The phase's public board as it stands, for freezing (laddered when the Ladder is on: freezing must reveal
    nothing)."""
    cache = _cache(session)
    board = build_leaderboard(session=session, phase=phase, split="public", ladder_step=cache.ladder_step)
    return {"public": board.model_dump(mode="json")}


def final_snapshot(*, session: Session, phase: Phase) -> dict[str, Any]:
    """The phase's final (private) board as it stands, for publishing: what its published board shows from then
    on."""
    board = build_leaderboard(
        session=session, phase=phase, split="private", final_submissions=_final_submissions(session)
    )
    dumped: dict[str, Any] = board.model_dump(mode="json")
    return dumped


@dataclass(frozen=True)
class PublicView:
    """The public board, and the public score each participant may see of their own submissions.

    ``laddered`` maps a submission to the score its owner sees under the Ladder and whether the Ladder revealed it
    (False: it did not beat its owner's best shown score by more than the step, which is shown instead). None
    when the Ladder is off or the viewer is an organiser: raw public scores.
    """

    board: Leaderboard
    laddered: Mapping[int, tuple[Score, bool]] | None

    def rank(self, submission_id: int) -> int | None:
        return rank_of(self.board, submission_id)

    def public_score(self, submission_id: int, raw: Score | None) -> tuple[Score | None, bool | None]:
        """The public score to show for a submission whose raw public score is ``raw``, and whether the Ladder
        revealed it (None: the Ladder plays no part). Under the Ladder a submission off the board (disqualified,
        or not scored on its phase's evaluation set) shows none: its raw score would be the probe the Ladder stops.
        """
        if self.laddered is None or raw is None:
            return raw, None
        shown = self.laddered.get(submission_id)
        return shown if shown is not None else (None, None)


def public_view(*, session: Session, viewer: User | None, phase: Phase) -> PublicView:
    """The phase's public board as anyone sees it (checked against the database: an owner's page must show its rank
    as soon as it shows ``succeeded``), with the public scores ``viewer`` may see of their own submissions. A board
    shown to organisers only is, to anyone else, one without rows: no submission of it has a rank for them."""
    organiser = viewer is not None and viewer.role == "organiser"
    entry = _cached(session=session, phase=phase, split="public", fresh=True)
    board = entry.board if storage.board_visible(phase, viewer) else entry.board.model_copy(update={"rows": []})
    return PublicView(board, None if organiser else entry.laddered)


class PublicViews:
    """:func:`public_view` of each phase, built when first asked for: a list of submissions spans phases."""

    def __init__(self, session: Session, viewer: User | None) -> None:
        self._session, self._viewer = session, viewer
        self._views: dict[int, PublicView] = {}

    def of(self, phase: Phase) -> PublicView:
        if phase.id not in self._views:
            self._views[phase.id] = public_view(session=self._session, viewer=self._viewer, phase=phase)
        return self._views[phase.id]


def visible_leaderboard(
    *, session: Session, phase: Phase, split: Split, viewer: User | None, fresh: bool = False
) -> Leaderboard:
    """What ``viewer`` (None: anonymous) may see of the phase's ``split``: frozen or published snapshot, publication
    and visibility rules applied (Forbidden when they hide it).

    ``fresh`` checks the cached board against the database whatever its age.
    """
    return _visible(session=session, phase=phase, split=split, viewer=viewer, fresh=fresh).board


def visible_leaderboard_json(*, session: Session, phase: Phase, split: Split, viewer: User | None) -> bytes:
    """:func:`visible_leaderboard` as the JSON body of the API (serialised once per version of the board)."""
    entry = _visible(session=session, phase=phase, split=split, viewer=viewer)
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
    laddered: dict[int, tuple[Score, bool]] | None = None  # the public split's owners' view (PublicView)
    commits: int = -1
    checked: float = -math.inf
    body: bytes | None = None


@dataclass
class _EngineCache:
    max_age_s: float = 0.0
    ladder_step: float | None = None
    final_submissions: int = DEFAULT_FINAL_SUBMISSIONS
    entries: dict[tuple[int, str], _Entry] = field(default_factory=dict)  # by (phase id, split)
    lock: threading.Lock = field(default_factory=threading.Lock)


_CACHES: weakref.WeakKeyDictionary[Engine, _EngineCache] = weakref.WeakKeyDictionary()
_commits = 0


@event.listens_for(Engine, "commit")
def _count_commit(_connection: Any) -> None:
    global _commits
    _commits += 1


def configure_cache(
    engine: Engine,
    *,
    max_age_s: float,
    ladder_step: float | None = None,
    final_submissions: int = DEFAULT_FINAL_SUBMISSIONS,
) -> None:
    """Serve this engine's boards for up to ``max_age_s`` before checking for other processes' writes; build
    the public board with the Ladder when ``ladder_step`` is set, the final board of ``final_submissions`` each."""
    cache = _CACHES.setdefault(engine, _EngineCache())
    if (cache.ladder_step, cache.final_submissions) != (ladder_step, final_submissions):
        cache.entries.clear()
    cache.max_age_s, cache.ladder_step, cache.final_submissions = max_age_s, ladder_step, final_submissions


def _cache(session: Session) -> _EngineCache:
    bind = session.get_bind()
    engine = bind if isinstance(bind, Engine) else bind.engine
    return _CACHES.setdefault(engine, _EngineCache())


def _visible(*, session: Session, phase: Phase, split: Split, viewer: User | None, fresh: bool = False) -> _Entry:
    if not storage.board_visible(phase, viewer):
        raise Forbidden(f"the leaderboard of phase {phase.name!r} is shown to organisers only")
    entry = _cached(session=session, phase=phase, split=split, fresh=fresh)
    organiser = viewer is not None and viewer.role == "organiser"
    if split == "private" and not entry.board.published and not organiser:
        raise Forbidden(f"the private leaderboard of phase {phase.name!r} is not published yet")
    return entry


def _cached(*, session: Session, phase: Phase, split: Split, fresh: bool) -> _Entry:
    """The phase's ``split`` board as it is now (whoever may see it), from the cache when it is still current."""
    cache = _cache(session)
    entry = cache.entries.get((phase.id, split))
    now, commits = time.monotonic(), _commits  # read first: a commit during the checks makes the next read check
    if entry is None or entry.commits != commits or fresh:
        with cache.lock:  # this process wrote: every reader waits for the check (read-your-writes)
            entry = _check(session=session, phase=phase, split=split, cache=cache, commits=commits, now=now)
    elif now - entry.checked >= cache.max_age_s and cache.lock.acquire(blocking=False):
        # Only age: one request checks, the others keep serving the current board meanwhile (no stampede of
        # checks under load, which cost 250 ms at p99 with 200 requests/s).
        try:
            entry = _check(session=session, phase=phase, split=split, cache=cache, commits=commits, now=now)
        finally:
            cache.lock.release()
    return entry


def _final_submissions(session: Session) -> int:
    """How many selected submissions count for a final board: the applied challenge's rule, else the setting."""
    return storage.get_rules(session=session).final_submissions or _cache(session).final_submissions


def _check(*, session: Session, phase: Phase, split: Split, cache: _EngineCache, commits: int, now: float) -> _Entry:
    state = storage.get_leaderboard_state(session=session, phase=phase)
    final_submissions = _final_submissions(session)
    key = (
        phase.evalset_id,  # the default phase follows the current set
        state.frozen,
        state.frozen_at,
        state.private_published,
        storage.leaderboard_fingerprint(session=session),
        final_submissions,  # a challenge applied in another process changes it
    )
    entry = cache.entries.get((phase.id, split))
    if entry is None or entry.key != key:
        entry = _build_entry(
            session=session,
            phase=phase,
            split=split,
            state=state,
            cache=cache,
            key=key,
            final_submissions=final_submissions,
        )
        cache.entries[(phase.id, split)] = entry
    entry.commits, entry.checked = commits, now
    return entry


def _snapshot_board(snapshot: dict[str, Any], phase: Phase) -> Leaderboard:
    # Snapshots taken before phases (migration 0007 kept them as main's) name no phase: they are their phase's.
    return Leaderboard.model_validate({"phase": phase.name, **with_track(snapshot)})


def _build_entry(
    *,
    session: Session,
    phase: Phase,
    split: Split,
    state: LeaderboardState,
    cache: _EngineCache,
    key: tuple[Any, ...],
    final_submissions: int,
) -> _Entry:
    if split == "private" and state.private_published and state.private_snapshot:
        board = _snapshot_board(state.private_snapshot, phase)
        return _Entry(key, board.model_copy(update={"frozen": state.frozen, "published": True}))
    frozen = split == "public" and state.frozen and bool(state.snapshot)
    if frozen and cache.ladder_step is None:
        return _Entry(key, _frozen_board(state, phase))
    public = _entries(session, "public", phase)
    # The owners' laddered scores follow the live entries, frozen board or not.
    step = cache.ladder_step if split == "public" else None
    revealed = None if step is None else revealed_scores(session, phase, public, step)
    if frozen:
        board = _frozen_board(state, phase)
    else:
        board = _build(
            session, split, phase=phase, public=public, revealed=revealed, final_submissions=final_submissions
        )
    return _Entry(key, board, None if revealed is None else _laddered_scores(session, revealed))


def _frozen_board(state: LeaderboardState, phase: Phase) -> Leaderboard:
    assert state.snapshot is not None
    board = _snapshot_board(state.snapshot["public"], phase)
    return board.model_copy(update={"frozen": True, "published": state.private_published})


def _laddered_scores(session: Session, revealed: Mapping[int, Shown]) -> dict[int, tuple[Score, bool]]:
    documents = storage.evaluation_scores(
        session=session, split="public", evaluation_ids=sorted({e.evaluation_id for e in revealed.values()})
    )
    scores = {evaluation_id: Score.model_validate(doc) for evaluation_id, doc in documents.items()}
    return {
        submission_id: (scores[shown.evaluation_id], shown.submission_id == submission_id)  # revealed: its own
        for submission_id, shown in revealed.items()
    }


def rank_of(board: Leaderboard, submission_id: int) -> int | None:
    for row in board.rows:
        if row.submission_id == submission_id:
            rank: int | None = row.rank
            return rank
    return None
