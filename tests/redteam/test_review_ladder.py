"""Independent review of the Ladder's kept verdicts (commits b4eedc4, c492528: ``ladder_decisions``, migration 0016,
``storage.ladder``, ``ladder.revealed_scores``/``_judge``), against real PostgreSQL.

Each confirmed finding is a test of what should hold; each failed on the reviewed code (they were written as strict
xfails, then fixed: ``ladder.best_shown`` ranks a competitor only by scores of its own submissions on the board, and the
verdicts of every phase on a set are one history). What was tried and held is in the review's report, not here.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from ..server.conftest import POLICY, Account, run_evaluation
from ..server.test_api_phases import create as create_phase
from ..server.test_api_teams import create, invite, join
from .test_ladder_history import Witness, laddered  # noqa: F401 - the fixture, registered by being imported
from .test_team_attacks import board, leave, probe

ORGANISER_REASON = {"reason": "hard-coded the public seeds"}


def upload_to(client: Any, account: Account, phase: str, name: str) -> tuple[int, int]:
    """An upload of the same policy as ``probe``'s to ``phase``: (submission id, evaluation id)."""
    response = client.post(
        "/api/v1/submissions",
        headers=account.headers,
        files={"file": ("policy.py", POLICY, "application/octet-stream")},
        data={"name": name, "phase": phase},
    )
    assert response.status_code == 201, response.text
    return int(response.json()["id"]), int(response.json()["evaluations"][0]["id"])


def test_a_second_phase_on_the_same_set_is_not_a_fresh_ladder(
    laddered: Any,  # noqa: F811 - the fixture imported above
    alice: Account,
    organiser: Account,
    db: Session,
) -> None:
    """Low (a configuration organisers may well make; older than the kept verdicts). ``main`` follows the current
    set (``sample``); an organiser opens ``round-2`` on the same set. alice's Ladder
    on ``main`` showed 0.90 for her 0.87 probe; the same policy uploaded to ``round-2`` reads 0.87, the exact public
    score of the same episodes the Ladder held back."""
    c = laddered
    probe(c, db, alice, 0.90, "base")
    held = probe(c, db, alice, 0.87, "held")
    assert Witness(c).look(alice, held) == (0.90, False)

    assert create_phase(c, organiser, "round-2", title="Round 2").status_code == 201
    again, evaluation = upload_to(c, alice, "round-2", "held, again")
    run_evaluation(db, evaluation, public=0.87)  # the same policy on the same public episodes: the same score
    assert Witness(c).look(alice, again) == (0.90, False)


def test_disqualifying_a_submission_takes_its_score_off_the_board(
    laddered: Any,  # noqa: F811
    alice: Account,
    organiser: Account,
    db: Session,
) -> None:
    """Medium (a regression of c492528: on 343ad8d this test passes). alice's honest 0.90 is shown; her 0.60
    (hard-coded seeds) is revealed; organisers disqualify it. Before the change the disqualification took 0.60 off
    the board; now one more upload of anything (1.50, far worse) is held at 0.60 and her row is back at 0.60 under
    that upload's name, with the disqualified run's per-scenario figures. The board could rank her by the best score
    she was shown by a submission still on it (0.90) without showing her anything new."""
    c = laddered
    probe(c, db, alice, 0.90, "honest")
    cheat = probe(c, db, alice, 0.60, "cheat")
    assert board(c) == [("alice", "cheat", 0.60)]
    response = c.post(f"/api/v1/admin/submissions/{cheat}/disqualify", headers=organiser.headers, json=ORGANISER_REASON)
    assert response.status_code == 200, response.text
    assert board(c) == [("alice", "honest", 0.90)]

    probe(c, db, alice, 1.50, "anything")
    assert board(c) == [("alice", "honest", 0.90)]


def test_disabling_a_member_takes_their_score_off_the_teams_row(
    laddered: Any,  # noqa: F811
    alice: Account,
    bob: Account,
    organiser: Account,
    db: Session,
) -> None:
    """Medium, finding 2's other door (passes on 343ad8d). alice's 0.60 is revealed on team ants' Ladder; bob's
    1.50 is held at it. Organisers disable alice: her rows
    leave the boards, but ants' row stays at 0.60 (bob's 1.50 under alice's figures)."""
    c = laddered
    assert create(c, alice, "ants").status_code == 201
    assert join(c, bob, invite(c, alice)).status_code == 200
    probe(c, db, alice, 0.60, "cheat")
    probe(c, db, bob, 1.50, "bobs")
    assert board(c) == [("ants", "cheat", 0.60)]

    assert c.post("/api/v1/admin/users/alice/disable", headers=organiser.headers).status_code == 200
    assert [score for _who, _name, score in board(c)] != [0.60]


def test_a_leavers_score_ranks_one_competitor(
    laddered: Any,  # noqa: F811
    alice: Account,
    bob: Account,
    db: Session,
) -> None:
    """Low (older than the kept verdicts). alice's 0.60 is revealed on ants' Ladder and bob's 1.50 held at it;
    alice leaves and takes her submission
    along. Both alice's row and ants' (bob alone) now show 0.60, read from alice's one evaluation."""
    c = laddered
    assert create(c, alice, "ants").status_code == 201
    assert join(c, bob, invite(c, alice)).status_code == 200
    probe(c, db, alice, 0.60, "alices")
    probe(c, db, bob, 1.50, "bobs")
    assert leave(c, alice).status_code == 200

    rows = board(c)
    assert ("alice", "alices", 0.60) in rows
    assert [score for _who, _name, score in rows].count(0.60) == 1, rows
