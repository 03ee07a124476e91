"""How a board orders entries, and groups them by the competitor they rank for (shared by the boards and the Ladder).

Lower scores are better; ties go to the earlier submission, then the lower id.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from layersched.server.storage import Competitor, ScoredEntry, Shown


def rank_key(entry: ScoredEntry | Shown) -> tuple[Any, ...]:
    """Lower score first; ties to the earlier submission."""
    return (entry.overall, entry.created_at, entry.submission_id)


def by_competitor(entries: Iterable[ScoredEntry]) -> dict[Competitor, list[ScoredEntry]]:
    """The entries of each competitor, in the order given."""
    competitors: dict[Competitor, list[ScoredEntry]] = {}
    for entry in entries:
        competitors.setdefault(entry.competitor, []).append(entry)
    return competitors
