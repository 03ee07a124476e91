"""A submission's outcome as the CLI prints it (``submit``, ``status``, ``logs``): its score with what it is a ratio
to, its rank or why it has none, and whether it counts for the final ranking, all on the submission's own phase.

A server runs several phases at once (dev and final, one per track): a submission's rank is on its phase's board,
its score a ratio to its phase's track's reference baseline (SJF on jobs-v1, HEFT on workflows-v1) and its final
selection counts within its phase, whichever phase happens to be the only open one or the current set's.
"""

from __future__ import annotations

from typing import Any

from layersched.sdk.standing import rank_text, selection_text
from layersched.sdk.terminal_text import continued

LADDER_NOTE = (
    "  the Ladder: this submission did not beat your best shown public score by more than its step; that score is shown"
)


def rank_for(client: Any, sub: Any) -> str:
    """The rank, or why there is none; asks the server for the board of the submission's phase (and who you are)
    only when that is needed."""
    if sub.rank is not None or sub.disqualified is not None or sub.state != "succeeded":
        return rank_text(sub, board=None)
    board = client.leaderboard("public", phase=sub.phase)
    if board.frozen or any(r.is_for(sub.owner) for r in board.rows):
        return rank_text(sub, board=board)
    me = client.me()
    return rank_text(sub, board=board, owner_is_organiser=me.role == "organiser" and me.name == sub.owner)


def selection_for(client: Any, sub: Any) -> str:
    """Whether ``sub`` counts for its phase's final ranking, naming the owner's selection in that phase."""
    needs_list = not sub.selected and sub.disqualified is None and sub.score is not None
    if not needs_list:
        return selection_text(sub, mine=[])
    me = client.me()
    if me.role == "organiser" and me.name == sub.owner:
        return selection_text(sub, mine=[], owner_is_organiser=True)
    mine = client.submissions(limit=200, phase=sub.phase).data if sub.phase else client.submissions(limit=200).data
    return selection_text(sub, mine=[s for s in mine if s.owner == sub.owner])


def shows_score(sub: Any) -> bool:
    return bool(sub.state == "succeeded" and sub.score is not None)


def references(client: Any) -> dict[str, str]:
    """Each phase's reference baseline, by phase name (what its scores are ratios to)."""
    return {p.name: p.reference for p in client.phases()}


def reference_for(client: Any, sub: Any) -> str:
    """The baseline ``sub``'s score is a ratio to: that of its phase's track, as the server names it (asked only
    when there is a score to show); from a server older than phases, that of its current set."""
    if not shows_score(sub):
        return ""
    if sub.phase is not None:
        found = references(client).get(sub.phase)
        if found is not None:
            return found
    return str(client.current_evalset().reference)


def outcome_line(sub: Any, rank: str, reference: str) -> str:
    """``#12 succeeded: score 0.9812 (95% CI ..., ratio to SJF, lower is better), rank 3`` and the per-scenario
    ratios; a failure's category and message; the state otherwise."""
    if shows_score(sub):
        per = ", ".join(f"{k} {v:.3f}" for k, v in sub.score.per_scenario.items())
        score = sub.score
        return (
            f"#{sub.id} succeeded: score {score.overall:.4f} (95% CI {score.ci_low:.4f}-{score.ci_high:.4f},"
            f" ratio to {reference}, lower is better), {rank}"
            + (f"\n  per scenario: {per}" if per else "")
            + (f"\n{LADDER_NOTE}" if sub.score_revealed is False else "")
        )
    dq = f", disqualified by the organisers: {continued(sub.disqualified)}" if sub.disqualified is not None else ""
    if sub.error is not None:
        return (
            f"#{sub.id} {sub.state}: {sub.error.category}: {continued(sub.error.message)}{dq}"
            f" (details: layersched logs {sub.id})"
        )
    return f"#{sub.id} {sub.state}{dq}"
