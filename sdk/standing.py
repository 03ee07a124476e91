"""Where a submission stands, in words: its public rank or why it has none, and whether it counts for the final
ranking.

A succeeded submission can lack a rank for four different reasons, and a student needs to know which one: it was
disqualified (the organisers' reason is shown, as Kaggle shows a removed entry's reason to its team), the board is
frozen (new results wait for the unfreeze), the board lists one row per participant and another submission is their
best, or (organisers only) it never ranks. The final ranking is a separate question, answered by the selection.
"""

from __future__ import annotations

from collections.abc import Sequence

from layersched.sdk.client import Leaderboard, Submission
from layersched.sdk.terminal_text import continued


def rank_text(sub: Submission, *, board: Leaderboard | None, owner_is_organiser: bool = False) -> str:
    """``rank 3``, or ``not ranked: <why>`` for a succeeded submission; ``board`` is the public board as the
    owner sees it (needed only when ``sub.rank`` is None and it is not disqualified)."""
    if sub.disqualified is not None:
        return f"not ranked: disqualified by the organisers: {continued(sub.disqualified)}"
    if sub.rank is not None:
        return f"rank {sub.rank}"
    if owner_is_organiser:
        return "not ranked: organisers' submissions never rank"
    if board is None:
        return "not ranked"
    if board.frozen:
        return "not ranked: the board is frozen; results since the freeze rank when an organiser unfreezes it"
    best = next((r for r in board.rows if r.is_for(sub.owner)), None)
    if best is not None and best.submission_id is not None and best.rank is not None:
        if best.members:
            return (
                f"not ranked: not your team's best; the board shows one submission per team, "
                f"team {best.participant}'s #{best.submission_id} at rank {best.rank}"
            )
        return (
            f"not ranked: not your best; the board shows one submission per participant, "
            f"your #{best.submission_id} at rank {best.rank}"
        )
    return "not ranked yet: the board has not taken this result in; try again in a few seconds"


def selection_text(sub: Submission, *, mine: Sequence[Submission], owner_is_organiser: bool = False) -> str:
    """Whether ``sub`` counts for the final ranking; ``mine`` is the owner's submissions (to name the selection)."""
    if owner_is_organiser:
        return "selected: no; organisers' submissions take no part in the final ranking"
    if sub.selected:
        return "selected: yes, it counts for the final ranking"
    if sub.disqualified is not None:
        return "selected: no; a disqualified submission cannot count for the final ranking"
    if sub.state != "succeeded" or sub.score is None:
        return f"selected: no; only a scored submission can be selected (this one is {sub.state})"
    chosen = [s.id for s in mine if s.selected and s.id != sub.id]
    if chosen:
        listed = ", ".join(f"#{i}" for i in sorted(chosen))
        return (
            f"selected: no, it does not count for the final ranking (your selection: {listed}); "
            f"layersched select {sub.id} adds it"
        )
    return (
        "selected: no; you have selected none, so your best public submissions count for the final ranking; "
        f"layersched select {sub.id} makes this one count"
    )
