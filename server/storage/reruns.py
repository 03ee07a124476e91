"""The evaluations an organiser asks for on an existing submission: reruns and audits, within its phase.

A rerun runs on the set of the submission's phase unless the organiser names another (a diagnostic: only a score
on the phase's set counts on its boards); an audit replays the newest succeeded evaluation on the phase's set.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy.orm import Session

from layersched.server.errors import Conflict
from layersched.server.models import Evaluation, User, utcnow
from layersched.server.storage.audit import add_log_entry
from layersched.server.storage.evalsets import get_evalset
from layersched.server.storage.evaluations import new_evaluation
from layersched.server.storage.submissions import get_submission, scored_evaluation


def create_rerun(
    *, session: Session, submission_id: int, evalset_name: str | None, actor: User, now: dt.datetime | None = None
) -> Evaluation:
    """A new evaluation (kind rerun) of an existing submission; never a new submission, never quota."""
    submission = get_submission(session=session, submission_id=submission_id, viewer=actor)
    evalset = submission.phase.evalset if evalset_name is None else get_evalset(session=session, name=evalset_name)
    evaluation = new_evaluation(session, submission, "rerun", evalset, now=now or utcnow(), requested_by=actor)
    add_log_entry(
        session, actor, "rerun", f"submission:{submission_id}", {"evaluation": evaluation.id, "evalset": evalset.name}
    )
    session.commit()
    return evaluation


def create_audit(
    *, session: Session, submission_id: int, sample: int | None, actor: User, now: dt.datetime | None = None
) -> Evaluation:
    """A new evaluation (kind audit) that replays the submission's newest succeeded evaluation."""
    submission = get_submission(session=session, submission_id=submission_id, viewer=actor)
    if sample is not None and sample < 1:
        raise ValueError(f"an audit sample must be at least 1 episode, got {sample}")
    phase_set = submission.phase.evalset.name
    target = scored_evaluation(submission, evalset_name=phase_set)
    if target is None:
        raise Conflict(
            f"submission {submission_id} has no succeeded evaluation on {phase_set!r}, the set of its phase "
            f"{submission.phase.name!r}, to audit"
        )
    evalset = get_evalset(session=session, name=target.evalset_name)
    evaluation = new_evaluation(
        session,
        submission,
        "audit",
        evalset,
        now=now or utcnow(),
        requested_by=actor,
        audit_of=target,
        audit_sample=sample,
    )
    add_log_entry(
        session, actor, "audit", f"submission:{submission_id}", {"evaluation": evaluation.id, "of": target.id}
    )
    session.commit()
    return evaluation
