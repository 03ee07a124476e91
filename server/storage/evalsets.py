"""Evaluation sets as registered rows: which one is current (revealing one after the competition is in ``phases``,
which knows whether a phase still uses it).

The current set is the one of the default phase ``main``: registering a set as current points ``main`` at it (see
``phases``), so that a server with one set keeps one phase that follows it, as before phases.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from layersched.server.errors import Conflict, NotFound
from layersched.server.models import EvalSet, Phase, utcnow
from layersched.sim.tracks import DEFAULT_TRACK_ID

DEFAULT_PHASE = "main"


def register_evalset(
    *,
    session: Session,
    name: str,
    commitment: str,
    path: str,
    scenarios: Sequence[dict[str, Any]],
    current: bool = True,
    track: str = DEFAULT_TRACK_ID,
) -> EvalSet:
    """Add an evaluation set (or update where the one with this name and commitment is read from); ``current``
    makes new submissions use it.

    ``scenarios`` is what participants may see: ``[{"name", "weight", "public_episodes"}]``; ``track`` is the id of
    the track whose problem they are (``layersched.sim.tracks``). A name keeps its commitment for good: a set with
    another commitment under a registered name is refused (Conflict naming both), since its phases' submissions
    were scored on, and its commitment published for, the registered one.
    """
    row = session.scalar(select(EvalSet).where(EvalSet.name == name))
    if row is not None and row.commitment != commitment:
        raise Conflict(changed_set_message(name=name, registered=row.commitment, given=commitment, path=path))
    if row is None:
        row = EvalSet(name=name, commitment=commitment, path=path, scenarios=list(scenarios), track=track)
        session.add(row)
    else:
        row.path, row.scenarios, row.track = path, list(scenarios), track
    if current:
        session.execute(update(EvalSet).where(EvalSet.name != name).values(current=False))
        row.current = True
        _point_default_phase(session, row)
    session.commit()
    return row


def changed_set_message(*, name: str, registered: str, given: str, path: str) -> str:
    """Why a set whose commitment is not the registered one's is refused under that name, naming both."""
    return (
        f"evaluation set {name!r} is registered with commitment {registered}, but {path} has commitment {given}: "
        "a registered set never changes (its commitment is published and its phases' submissions were scored on "
        "it); register the new file under another name (`name = ...` in it, or admin evalset new --name)"
    )


def _point_default_phase(session: Session, evalset: EvalSet) -> None:
    """Make ``evalset`` the set of the phase ``main``, made (open now, public, open-ended) when no phase exists."""
    phase = session.scalar(select(Phase).where(Phase.name == DEFAULT_PHASE))
    if phase is not None:
        phase.evalset = evalset
    elif session.scalar(select(Phase.id).limit(1)) is None:
        now = utcnow()
        session.add(Phase(name=DEFAULT_PHASE, title="Main", evalset=evalset, opens_at=now, created_at=now))


def get_current_evalset(*, session: Session) -> EvalSet | None:
    return session.scalar(select(EvalSet).where(EvalSet.current.is_(True)))


def find_evalset(*, session: Session, name: str) -> EvalSet | None:
    return session.scalar(select(EvalSet).where(EvalSet.name == name))


def get_evalset(*, session: Session, name: str) -> EvalSet:
    row = session.scalar(select(EvalSet).where(EvalSet.name == name))
    if row is None:
        raise NotFound(f"evaluation set {name!r} does not exist")
    return row
