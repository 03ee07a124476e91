"""The Ladder's verdicts: what it showed of each submission's public score on a phase's set, written once.

``ladder.revealed_scores`` judges (``layersched.sim.scoring.ladder``); this module keeps what it decided. A verdict is
written the first time a board sees the submission's score, which is before anyone can be shown it, and is never
changed: a Ladder's history is its verdicts in the order they were made, whatever happens to the submissions later.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session, aliased

from layersched.server.models import EvalSet, Evaluation, LadderVerdict, Phase, Submission
from layersched.server.storage.leaderboard import Competitor, origin_of
from layersched.server.storage.members import lock_row


@dataclass(frozen=True)
class Shown:
    """The public score a submission shows under the Ladder: ``evaluation_id``'s, of submission ``submission_id``
    (itself when the Ladder revealed it, else the one whose score its Ladder showed in its place)."""

    submission_id: int
    evaluation_id: int
    overall: float
    created_at: dt.datetime


@dataclass(frozen=True)
class Verdict:
    """What the Ladder of ``origin`` decided for a submission whose evaluation ``evaluation_id`` it judged."""

    submission_id: int
    origin: Competitor
    evaluation_id: int
    shown: Shown  # its own score when the Ladder revealed it


def ladder_verdicts(*, session: Session, phase: Phase) -> dict[int, Verdict]:
    """Every verdict on public scores on ``phase``'s set, by submission, in the order they were made (so that each
    Ladder's latest verdict is the last of its origin). A Ladder guards a hidden split, so the verdicts of every
    phase on the set are one history: a second phase on the set is not a fresh Ladder. Disqualified submissions and
    those of disabled users are in: they stay probes of their Ladder when they leave the boards."""
    probe, shown_evaluation, shown_submission = aliased(Submission), aliased(Evaluation), aliased(Submission)
    rows = session.execute(
        select(
            LadderVerdict.submission_id,
            probe.team_id,
            probe.owner_id,
            LadderVerdict.evaluation_id,
            shown_submission.id,
            shown_evaluation.id,
            shown_evaluation.score_public["overall"].as_float(),
            shown_submission.created_at,
        )
        .join(probe, probe.id == LadderVerdict.submission_id)
        .join(shown_evaluation, shown_evaluation.id == LadderVerdict.shown_evaluation_id)
        .join(shown_submission, shown_submission.id == shown_evaluation.submission_id)
        .where(LadderVerdict.evalset_name == phase.evalset.name)  # every phase's on the set: one hidden split
        .order_by(LadderVerdict.id)
    )
    return {
        submission_id: Verdict(submission_id, origin_of(team_id, owner_id), evaluation_id, Shown(*shown))
        for submission_id, team_id, owner_id, evaluation_id, *shown in rows
    }


def lock_ladders(*, session: Session, phase: Phase) -> None:
    """Hold the Ladders of ``phase``'s set until the transaction ends: one writer of verdicts at a time, so that
    each verdict is judged against every verdict made before it (two boards built at once by two processes, of one
    phase or of two phases on the set, would otherwise judge two new probes of one Ladder against the same best)."""
    lock_row(session, EvalSet, phase.evalset.id)


def record_ladder_verdicts(*, session: Session, phase: Phase, verdicts: Iterable[Verdict]) -> None:
    """Write the new ``verdicts`` on ``phase``'s set (once: a submission has at most one per set) and commit."""
    session.add_all(
        LadderVerdict(
            submission_id=verdict.submission_id,
            evalset_name=phase.evalset.name,
            evaluation_id=verdict.evaluation_id,
            shown_evaluation_id=verdict.shown.evaluation_id,
        )
        for verdict in verdicts
    )
    session.commit()
