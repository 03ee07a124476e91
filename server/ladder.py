"""The Ladder on a phase's public board: per submission, the public score it shows, and a competitor's best shown
entry.

The rule is ``layersched.sim.scoring.ladder``: a submission shows its own score when it beats its Ladder's best shown
score by more than the step, else that best shown score. Here it is applied to a board's submissions, one Ladder per
competitor a submission was made under (``ScoredEntry.origin``), whoever joins or leaves later: a member who leaves
takes their submissions along, not a fresh look at them. Its verdicts are made once and kept (``storage.ladder``), so
nothing done later (a rerun, a disqualification, an earlier submission finishing last) changes what was shown.

:func:`revealed_scores` is the one place that computes what the Ladder shows: the board, the owner's view
(``leaderboard.PublicView``) and freezing all read it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.models import Phase
from layersched.server.ranking import rank_key
from layersched.server.storage import ScoredEntry, Shown, Verdict
from layersched.sim.scoring import ladder


def best_shown(own: list[ScoredEntry], revealed: Mapping[int, Shown]) -> ScoredEntry | None:
    """The competitor's row under the Ladder: of its submissions, the one whose shown score is best, with that score;
    None when no submission of the competitor shows a score of its own submissions on the board.

    A submission may show the score of another: revealed before it under the same Ladder. A competitor ranks only
    by scores of its own submissions that are on the board (``own``). A score whose submission left the board
    (disqualified, its owner disabled) ranks nobody: a probe it held back would otherwise put a disqualified score
    back on the board. Nor does a score whose submission went with a member who left a team: one evaluation would
    rank two competitors. A probe that shows such a score still shows it to its owner (``leaderboard.PublicView``),
    never its raw one. A competitor whose submissions were all made under one Ladder shows its last revealed entry
    itself; a submission showing its score before a rerun ranks with that score.
    """
    on_board = {entry.submission_id for entry in own}
    ranked = [entry for entry in own if revealed[entry.submission_id].submission_id in on_board]
    if not ranked:
        return None

    def key(entry: ScoredEntry) -> tuple[Any, ...]:
        shown = revealed[entry.submission_id]
        return (*rank_key(shown), shown.submission_id != entry.submission_id)

    best = min(ranked, key=key)
    shown = revealed[best.submission_id]
    if shown.evaluation_id == best.evaluation_id:
        return best
    return replace(best, overall=shown.overall, evaluation_id=shown.evaluation_id)


def _submitted(entry: ScoredEntry) -> tuple[Any, ...]:
    return (entry.created_at, entry.submission_id)


def revealed_scores(session: Session, phase: Phase, entries: list[ScoredEntry], step: float) -> dict[int, Shown]:
    """Per submission, the public score the Ladder (``scoring.ladder``) shows for it.

    One Ladder per competitor a submission was made under (``ScoredEntry.origin``: a team shares one, its members'
    submissions being probes of one hidden split; a participant alone has their own, which they return to when they
    leave). A submission shows its own score when it beat its Ladder's best shown score by more than ``step``, else
    that best shown score (the previous one revealed). The board and the owner's view both read this.

    Each verdict is made once, the first time a board sees the submission's score, and kept (``storage.ladder``):
    judging every submission again on each build, in creation order, took shown scores back and revealed withheld
    ones whenever that order was not the order the scores came in (an earlier submission finishing later, a rerun)
    or a submission left the history (disqualified, its owner disabled). Replaying the history in the order the
    evaluations finished instead would still re-judge: a worker stamps ``finished_at`` before it commits, so two
    results can become visible in the other order than their stamps; a rerun's new score, a new ``step`` or a row
    left out of the query would each change the replay. A verdict written down is what was shown, whatever changes
    later.
    """
    verdicts = storage.ladder_verdicts(session=session, phase=phase)
    if any(entry.submission_id not in verdicts for entry in entries):
        storage.lock_ladders(session=session, phase=phase)
        verdicts = storage.ladder_verdicts(session=session, phase=phase)  # another process's, made meanwhile
        new = _judge([e for e in entries if e.submission_id not in verdicts], verdicts.values(), step)
        storage.record_ladder_verdicts(session=session, phase=phase, verdicts=new)  # commits: the lock ends
        verdicts |= {verdict.submission_id: verdict for verdict in new}
    return {entry.submission_id: verdicts[entry.submission_id].shown for entry in entries}


def _judge(probes: list[ScoredEntry], history: Iterable[Verdict], step: float) -> list[Verdict]:
    """The Ladder's verdicts on ``probes``, none judged before, after ``history`` (each Ladder's verdicts in the order
    they were made: the last one of an origin shows its best shown score).

    None of the probes has been shown yet, so the order they are judged in is free: creation order, the order their
    owners made them in (and what the boards did before verdicts were kept, so that the first board after the
    upgrade shows what the last one before it did).
    """
    best = {verdict.origin: verdict.shown for verdict in history}
    judged = []
    for entry in sorted(probes, key=_submitted):
        held = best.get(entry.origin)
        if held is None or ladder(held.overall, entry.overall, step).show:
            best[entry.origin] = held = Shown(entry.submission_id, entry.evaluation_id, entry.overall, entry.created_at)
        judged.append(Verdict(entry.submission_id, entry.origin, entry.evaluation_id, held))
    return judged
