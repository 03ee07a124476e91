"""Red team of the Ladder's history (issue 30's review, its two LOW findings): what a participant was shown of a
submission's public score never changes later and is never replaced by more exact information, whatever happens
afterwards: evaluations finishing out of order, reruns, disqualification, disabling an account, membership changes.

The review found the Ladder re-judged every submission in creation order each time the board was built, so that a
score shown once could be taken back (an earlier submission finishing after a later one, a rerun's new score) and a
submission taken off the board (disqualified, its owner disabled) left its Ladder's history, revealing the exact
scores of the probes it had held back. Each test below failed against that code.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy.orm import Session

from layersched.server.app import create_app
from layersched.server.config import Settings

from ..server.conftest import Account, TestClient, run_evaluation, submit
from ..server.test_api_teams import create, invite, join
from .test_team_attacks import board, leave, probe

STEP = 0.05


@pytest.fixture
def laddered(settings: Settings, enqueued: Any) -> Iterator[Any]:
    quotas = {"public_ladder_step": STEP, "daily_quota": 10, "max_in_flight": 2}
    with TestClient(create_app(settings.model_copy(update=quotas), enqueuer=enqueued)) as c:
        yield c


class Witness:
    """Every public score a participant was shown of a submission (with whether the Ladder revealed it), checked
    against what they were shown of it before: the property under test, asserted on every look."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.seen: dict[int, tuple[float, bool]] = {}

    def look(self, account: Account, sid: int) -> tuple[float, bool]:
        body = self.client.get(f"/api/v1/submissions/{sid}", headers=account.headers).json()
        now = (body["score"]["overall"], body["score_revealed"])
        assert self.seen.setdefault(sid, now) == now, f"submission {sid} showed {self.seen[sid]}, now {now}"
        return now


def queued(client: Any, account: Account, name: str) -> tuple[int, int]:
    """A submission whose evaluation has not finished yet: (submission id, evaluation id)."""
    response = submit(client, account, name=name)
    assert response.status_code == 201, response.text
    body = response.json()
    return int(body["id"]), int(body["evaluations"][0]["id"])


def test_an_evaluation_finishing_late_cannot_take_back_a_shown_score(
    laddered: Any, alice: Account, db: Session
) -> None:
    """A was made before B, B finished first and was shown; A finished within the step of it. Re-judged in creation
    order A was revealed (0.93, exactly) and B taken back: the Ladder judges each when its score first showed."""
    c, witness = laddered, Witness(laddered)
    a, a_evaluation = queued(c, alice, "A")
    b, b_evaluation = queued(c, alice, "B")
    run_evaluation(db, b_evaluation, public=0.95)
    assert witness.look(alice, b) == (0.95, True)
    assert board(c) == [("alice", "B", 0.95)]

    run_evaluation(db, a_evaluation, public=0.93)  # within the step of B's: a probe the Ladder holds back
    assert witness.look(alice, a) == (0.95, False)
    assert witness.look(alice, b) == (0.95, True)
    assert board(c) == [("alice", "B", 0.95)]
    # The next probe is judged against what was shown (0.95), not against A's hidden 0.93.
    better = probe(c, db, alice, 0.89, "C")
    assert witness.look(alice, better) == (0.89, True)
    assert [witness.look(alice, sid) for sid in (a, b)] == [(0.95, False), (0.95, True)]


def test_a_rerun_changes_nothing_the_ladder_showed(
    laddered: Any, alice: Account, organiser: Account, db: Session
) -> None:
    """A rerun (a simulator fix, an organiser's check) gives a shown submission a new raw score. Re-judging with it
    took the shown 0.90 back and revealed the held-back probe's exact 0.87."""
    c, witness = laddered, Witness(laddered)
    base = probe(c, db, alice, 0.90, "base")
    held = probe(c, db, alice, 0.87, "held")
    assert (witness.look(alice, base), witness.look(alice, held)) == ((0.90, True), (0.90, False))

    for sid, public in ((base, 0.97), (held, 0.80)):
        rerun = c.post(f"/api/v1/admin/submissions/{sid}/rerun", headers=organiser.headers)
        assert rerun.status_code == 202, rerun.text
        run_evaluation(db, rerun.json()["id"], public=public)
        assert (witness.look(alice, base), witness.look(alice, held)) == ((0.90, True), (0.90, False))
    assert board(c) == [("alice", "base", 0.90)]
    raw = c.get(f"/api/v1/submissions/{held}", headers=organiser.headers).json()
    assert raw["score"]["overall"] == 0.80  # organisers read the rerun's raw score


def test_disqualifying_a_shown_submission_reveals_nothing_its_ladder_withheld(
    laddered: Any, alice: Account, organiser: Account, db: Session
) -> None:
    """base raised alice's Ladder to 0.90 and held back 0.87 and 0.86. Disqualifying base took it out of the
    Ladder's history: 0.87 was then revealed. A disqualified submission stays a probe; it only leaves the board."""
    c, witness = laddered, Witness(laddered)
    base = probe(c, db, alice, 0.90, "base")
    held = [probe(c, db, alice, public, f"held {public}") for public in (0.87, 0.86)]
    assert [witness.look(alice, sid) for sid in held] == [(0.90, False), (0.90, False)]

    response = c.post(
        f"/api/v1/admin/submissions/{base}/disqualify", headers=organiser.headers, json={"reason": "hard-coded seeds"}
    )
    assert response.status_code == 200, response.text
    assert [witness.look(alice, sid) for sid in held] == [(0.90, False), (0.90, False)]
    assert "base" not in [name for _who, name, _score in board(c)]
    # Her probes show the disqualified 0.90, which ranks nobody (the Ladder review's finding 2): she has no row.
    assert board(c) == []
    # A new probe is still judged against the 0.90 the Ladder showed.
    later = probe(c, db, alice, 0.86, "later")
    assert witness.look(alice, later) == (0.90, False)
    # The disqualified submission itself shows nothing to its owner (its raw score would be a probe).
    own = c.get(f"/api/v1/submissions/{base}", headers=alice.headers).json()
    assert (own["disqualified"], own["score"], own["score_revealed"]) == ("hard-coded seeds", None, None)


def test_disabling_a_member_reveals_nothing_the_teams_ladder_withheld(
    laddered: Any, alice: Account, bob: Account, organiser: Account, db: Session
) -> None:
    """alice's 0.90 held back bob's 0.87 on their team's Ladder. Disabling alice took her rows off the boards and
    out of the Ladder's history: bob read 0.87. Enabling her again, or bob leaving, changes nothing either."""
    c, witness = laddered, Witness(laddered)
    assert create(c, alice, "ants").status_code == 201
    assert join(c, bob, invite(c, alice)).status_code == 200
    probe(c, db, alice, 0.90, "base")
    held = probe(c, db, bob, 0.87, "held")
    assert witness.look(bob, held) == (0.90, False)

    assert c.post("/api/v1/admin/users/alice/disable", headers=organiser.headers).status_code == 200
    assert witness.look(bob, held) == (0.90, False)
    assert board(c) == []  # bob's probe shows alice's 0.90, off the boards with her: it ranks nobody
    assert c.post("/api/v1/admin/users/alice/enable", headers=organiser.headers).status_code == 200
    assert witness.look(bob, held) == (0.90, False)
    assert leave(c, bob).status_code == 200
    assert witness.look(bob, held) == (0.90, False)


def test_a_new_step_judges_new_probes_only(
    laddered: Any, settings: Settings, enqueued: Any, alice: Account, db: Session
) -> None:
    """Organisers narrowing the step (0.05 to 0.01) re-judged every submission with it: 0.93, held back, was then
    revealed. Verdicts made stay; the new step judges the probes made after it."""
    c, witness = laddered, Witness(laddered)
    base = probe(c, db, alice, 0.95, "base")
    held = probe(c, db, alice, 0.93, "held")
    assert (witness.look(alice, base), witness.look(alice, held)) == ((0.95, True), (0.95, False))

    narrow = {"public_ladder_step": 0.01, "daily_quota": 10, "max_in_flight": 2}
    with TestClient(create_app(settings.model_copy(update=narrow), enqueuer=enqueued)) as c2:
        witness.client = c2
        assert (witness.look(alice, base), witness.look(alice, held)) == ((0.95, True), (0.95, False))
        closer = probe(c2, db, alice, 0.93, "closer")  # 0.02 below the best shown: beyond the new step
        assert witness.look(alice, closer) == (0.93, True)
