"""A small term for the organisers' tests (issue 32): two phases, a team and a participant alone, and submissions in
every state an organiser meets (scored, failed by the policy, failed by the service, queued, running, cancelled),
with known queue waits and run times."""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass, field

from sqlalchemy import update
from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.models import Evaluation, Phase, Submission, User

from .conftest import SCENARIOS, run_evaluation

T0 = dt.datetime(2027, 2, 1, 9, 0, tzinfo=dt.timezone.utc)
HOSTILE = '=HYPERLINK("http://evil.example")<script>'  # a submission name: formula and markup at once


@dataclass
class Term:
    users: dict[str, User] = field(default_factory=dict)
    ids: dict[str, int] = field(default_factory=dict)  # submissions by label
    phases: dict[str, Phase] = field(default_factory=dict)


def add(session: Session, term: Term, label: str, owner: str, phase: str, name: str | None = None) -> Evaluation:
    submission, evaluation = storage.create_submission(
        session=session,
        owner=term.users[owner],
        name=name or label,
        description="",
        bundle_sha256=hashlib.sha256(label.encode()).hexdigest(),
        bundle_format="py",
        bundle_bytes=40,
        phase=term.phases[phase],
    )
    term.ids[label] = submission.id
    return evaluation


def times(session: Session, evaluation_id: int, created: int, started: int | None, finished: int | None) -> None:
    """Set an evaluation's and its submission's times, in seconds after T0."""
    at = {"created_at": T0 + dt.timedelta(seconds=created)}
    evaluation = session.get(Evaluation, evaluation_id)
    assert evaluation is not None
    session.execute(update(Submission).where(Submission.id == evaluation.submission_id).values(**at))
    values = {
        **at,
        "started_at": T0 + dt.timedelta(seconds=started) if started is not None else None,
        "finished_at": T0 + dt.timedelta(seconds=finished) if finished is not None else None,
    }
    session.execute(update(Evaluation).where(Evaluation.id == evaluation_id).values(**values))
    session.commit()


def make_term(session: Session, organiser: User) -> Term:
    """``main`` (the sample set) and ``final`` (a hidden set); ada and ben in team owls, cyd alone."""
    term = Term()
    storage.register_evalset(session=session, name="spring", commitment="s" * 64, path="spring.toml",
                             scenarios=SCENARIOS, current=False)  # fmt: skip
    term.phases["main"] = storage.get_phase(session=session, name="main")
    term.phases["final"] = storage.create_phase(
        session=session, name="final", title="Final", evalset_name="spring", actor=organiser, opens_at=T0
    )
    for name in ("ada", "ben", "cyd"):
        term.users[name] = storage.create_user(session=session, name=name, email=f"{name}@uni.example")
    storage.create_team(session=session, name="owls", founder=term.users["ada"], actor=term.users["ada"],
                        deadline=None, now=T0)  # fmt: skip
    limits = storage.Limits(daily_quota=100, max_in_flight=100, final_submissions=2)
    storage.assign_member(session=session, team_name="owls", user=term.users["ben"], actor=organiser, max_size=3,
                          limits=limits, now=T0)  # fmt: skip

    scored = add(session, term, "ada-scored", "ada", "final")
    run_evaluation(session, scored.id, public=0.82, private=0.85)
    times(session, scored.id, 0, 30, 90)  # waited 30 s, ran 60 s
    ben = add(session, term, "ben-scored", "ben", "final", name=HOSTILE)
    run_evaluation(session, ben.id, public=0.91, private=0.80)
    times(session, ben.id, 10, 20, 140)
    timeout = add(session, term, "cyd-timeout", "cyd", "final")
    run_evaluation(session, timeout.id, fail=("timeout", "hub-20/e1: decision took 2.1 s"))
    times(session, timeout.id, 20, 50, 60)
    lost = add(session, term, "cyd-lost", "cyd", "main")
    run_evaluation(session, lost.id, fail=("infrastructure", "no heartbeat from worker 'w1'"), infrastructure=True)
    times(session, lost.id, 30, 40, 640)
    bad_bundle = add(session, term, "ada-bundle", "ada", "main")
    run_evaluation(session, bad_bundle.id, fail=("invalid_bundle", "the bundle cannot be run"), infrastructure=True)
    times(session, bad_bundle.id, 40, 45, 46)
    add(session, term, "cyd-queued", "cyd", "final")
    running = add(session, term, "ben-running", "ben", "final")
    storage.start_evaluation(session=session, evaluation_id=running.id, worker_id="w1", total=2, sim_version="1.0.0",
                             image_digest=None, sandbox="process")  # fmt: skip
    cancelled = add(session, term, "ada-cancelled", "ada", "main")
    storage.cancel_submission(session=session, submission_id=cancelled.submission_id, actor=organiser)
    return term
