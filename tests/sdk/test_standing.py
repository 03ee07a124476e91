"""Where a submission stands, in words (pure logic; the same against the real app is in test_cli.py)."""

from __future__ import annotations

from typing import Any

import pytest

from layersched.sdk.client import Leaderboard, LeaderboardRow, Progress, Score, Submission
from layersched.sdk.standing import rank_text, selection_text


def submission(**fields: Any) -> Submission:
    base: dict[str, Any] = {
        "id": 5,
        "name": "p",
        "owner": "alice",
        "created_at": "2026-01-01T00:00:00Z",
        "bundle_sha256": "a" * 64,
        "state": "succeeded",
        "progress": Progress(2, 2),
        "score": Score(0.98, 0.95, 1.01, {}),
    }
    return Submission(**{**base, **fields})


def board(*rows: LeaderboardRow, frozen: bool = False) -> Leaderboard:
    return Leaderboard(split="public", frozen=frozen, published=False, rows=list(rows))


GREEDY = LeaderboardRow(rank=None, participant="Greedy", submission_name="", score=1.0, ci_low=1, ci_high=1,
                        baseline=True)  # fmt: skip


@pytest.mark.parametrize(
    ("sub", "shown", "expected"),
    [
        (submission(rank=2), None, "rank 2"),
        (submission(rank=2, disqualified="copied"), None, "not ranked: disqualified by the organisers: copied"),
        (submission(), None, "not ranked"),
        (submission(), board(GREEDY, frozen=True), "not ranked: the board is frozen; results since the freeze rank "
         "when an organiser unfreezes it"),
        (submission(), board(GREEDY, LeaderboardRow(rank=1, participant="alice", submission_name="q", score=0.9,
                                                    ci_low=0.8, ci_high=1.0, submission_id=3)),
         "not ranked: not your best; the board shows one submission per participant, your #3 at rank 1"),
        (submission(), board(GREEDY), "not ranked yet: the board has not taken this result in; try again in a few "
         "seconds"),
    ],
    ids=["ranked", "disqualified-wins-over-rank", "no-board", "frozen", "not-best", "not-yet"],
)  # fmt: skip
def test_rank_text(sub: Submission, shown: Leaderboard | None, expected: str) -> None:
    assert rank_text(sub, board=shown) == expected


def test_an_organisers_submission_never_ranks() -> None:
    assert rank_text(submission(), board=board(GREEDY), owner_is_organiser=True) == (
        "not ranked: organisers' submissions never rank"
    )
    assert selection_text(submission(), mine=[submission(id=9)], owner_is_organiser=True) == (
        "selected: no; organisers' submissions take no part in the final ranking"
    )


@pytest.mark.parametrize(
    ("sub", "mine", "expected"),
    [
        (submission(selected=True), [], "selected: yes, it counts for the final ranking"),
        (submission(disqualified="x"), [], "selected: no; a disqualified submission cannot count for the final "
         "ranking"),
        (submission(state="failed", score=None), [], "selected: no; only a scored submission can be selected (this "
         "one is failed)"),
        (submission(), [submission(id=9, selected=True), submission(id=4, selected=True)],
         "selected: no, it does not count for the final ranking (your selection: #4, #9); layersched select 5 adds "
         "it"),
        (submission(), [submission(id=9)], "selected: no; you have selected none, so your best public submissions "
         "count for the final ranking; layersched select 5 makes this one count"),
    ],
    ids=["selected", "disqualified", "not-scored", "others-selected", "none-selected"],
)  # fmt: skip
def test_selection_text(sub: Submission, mine: list[Submission], expected: str) -> None:
    assert selection_text(sub, mine=mine) == expected
