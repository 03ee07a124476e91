"""Moderation at scale: disqualifying or rerunning several submissions at once, chosen by id or by the filter of the
organisers' view (``submission_views.SubmissionFilter``). Each is one transaction (a refusal changes nothing) and
writes the same audit entries as one submission's action, one per submission."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from layersched.server.errors import Conflict, NotFound
from layersched.server.models import ACTIVE_STATES, Evaluation, Phase, Submission, User, utcnow
from layersched.server.storage.audit import add_log_entry
from layersched.server.storage.evalsets import get_evalset
from layersched.server.storage.evaluations import new_evaluation
from layersched.server.storage.submission_views import SubmissionFilter, chosen_ids

MAX_BULK = 1000  # the most one bulk action touches: a filter that matches more is refused, naming the count


def bulk_targets(
    *, session: Session, ids: Sequence[int] | None, chosen: SubmissionFilter | None, most: int = MAX_BULK
) -> list[int]:
    """The submissions a bulk action is for: ``ids`` (each must exist) or what ``chosen`` matches (a filter with
    at least one criterion: an empty one would be every submission), oldest first."""
    if ids:
        wanted = sorted(set(ids))
        found = set(session.scalars(select(Submission.id).where(Submission.id.in_(wanted))))
        missing = [i for i in wanted if i not in found]
        if missing:
            raise NotFound(
                f"submission {missing[0]} does not exist"
                + (f" (nor {len(missing) - 1} more)" if len(missing) > 1 else "")
            )
        if len(wanted) > most:
            raise Conflict(f"{len(wanted)} submissions are more than one action may touch ({most})")
        return wanted
    if chosen is None or chosen == SubmissionFilter():
        raise ValueError("name submissions by id or by a filter with at least one criterion")
    targets = chosen_ids(session=session, chosen=chosen, limit=most)
    if len(targets) > most:
        raise Conflict(f"the filter matches more than {most} submissions, the most one action may touch: narrow it")
    return targets


def _load(session: Session, ids: Sequence[int]) -> list[Submission]:
    return list(
        session.scalars(
            select(Submission)
            .where(Submission.id.in_(list(ids)))
            .options(selectinload(Submission.evaluations), selectinload(Submission.phase).selectinload(Phase.evalset))
            .order_by(Submission.id)
        )
    )


def bulk_disqualify(*, session: Session, ids: Sequence[int], reason: str, actor: User) -> list[int]:
    """Disqualify every one of ``ids`` with ``reason`` (and take it out of its final selection)."""
    submissions = _load(session, ids)
    for submission in submissions:
        submission.disqualified_reason = reason
        submission.selected = False
        add_log_entry(session, actor, "disqualify", f"submission:{submission.id}", {"reason": reason, "bulk": True})
    session.commit()
    return [s.id for s in submissions]


def bulk_rerun(
    *, session: Session, ids: Sequence[int], evalset_name: str | None, actor: User, now: dt.datetime | None = None
) -> tuple[list[Evaluation], list[tuple[int, str]]]:
    """A rerun of each of ``ids`` (on its phase's set, or ``evalset_name``'s); those with an evaluation queued or
    running already are skipped, with why. Returns the new evaluations and the skipped (id, why)."""
    other = get_evalset(session=session, name=evalset_name) if evalset_name is not None else None
    now = now or utcnow()
    made: list[Evaluation] = []
    skipped: list[tuple[int, str]] = []
    for submission in _load(session, ids):
        active = [e.id for e in submission.evaluations if e.state in ACTIVE_STATES]
        if active:
            skipped.append((submission.id, f"evaluation {active[0]} is queued or running already"))
            continue
        evalset = other or submission.phase.evalset
        evaluation = new_evaluation(session, submission, "rerun", evalset, now=now, requested_by=actor)
        detail = {"evaluation": evaluation.id, "evalset": evalset.name, "bulk": True}
        add_log_entry(session, actor, "rerun", f"submission:{submission.id}", detail)
        made.append(evaluation)
    session.commit()
    return made, skipped
