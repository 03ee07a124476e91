"""Phases: a challenge's stages, each on its own evaluation set, with opening and closing times, a quota and boards.

``main`` is the default phase, the one a server with a single evaluation set has: registering a set as current
points ``main`` at it, and makes ``main`` when no phase exists yet (migration 0007 makes it from today's data).
Organisers add their own (``dev``, ``final``) with :func:`create_phase`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal, TypedDict

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from layersched.server.errors import Conflict, NotFound
from layersched.server.models import EvalSet, Phase, User, utcnow
from layersched.server.storage.audit import add_log_entry
from layersched.server.storage.evalsets import DEFAULT_PHASE, get_evalset

__all__ = ["DEFAULT_PHASE"]  # defined with the registration that keeps it (evalsets.register_evalset)


def _utc(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).isoformat()


def is_published(phase: Phase) -> bool:
    """Whether the phase's private board (its final ranking) is published, which closes it whatever its times say."""
    return phase.board_state is not None and phase.board_state.private_published


def is_open(phase: Phase, now: dt.datetime) -> bool:
    if is_published(phase):
        return False
    return phase.opens_at <= now and (phase.closes_at is None or now < phase.closes_at)


PhaseState = Literal["upcoming", "open", "closed", "published"]


def phase_state(phase: Phase, now: dt.datetime) -> PhaseState:
    """``upcoming`` (opens later), ``open``, ``closed`` (by its times) or ``published`` (its private board is: closed
    for good)."""
    if is_published(phase):
        return "published"
    if now < phase.opens_at:
        return "upcoming"
    return "open" if is_open(phase, now) else "closed"


def closed_because(phase: Phase, now: dt.datetime) -> str | None:
    """Why ``phase`` takes no submissions at ``now`` (naming the time it opens or closed), None while it is open."""
    if is_published(phase):
        assert phase.board_state is not None
        published_at = phase.board_state.published_at
        return f"the private leaderboard of phase {phase.name!r} was published" + (
            f" at {_utc(published_at)}" if published_at else ""
        )
    if now < phase.opens_at:
        return f"phase {phase.name!r} is not open yet: it opens at {_utc(phase.opens_at)}"
    if phase.closes_at is not None and now >= phase.closes_at:
        return f"phase {phase.name!r} closed at {_utc(phase.closes_at)}"
    return None


def board_visible(phase: Phase, viewer: User | None) -> bool:
    """Whether ``viewer`` may see the phase's boards (an organisers-only phase's: organisers alone)."""
    return phase.visibility == "public" or (viewer is not None and viewer.role == "organiser")


def get_phase(*, session: Session, name: str) -> Phase:
    phase = session.scalar(
        select(Phase).where(Phase.name == name).options(selectinload(Phase.evalset), selectinload(Phase.board_state))
    )
    if phase is None:
        raise NotFound(f"phase {name!r} does not exist")
    return phase


def list_phases(*, session: Session) -> list[Phase]:
    """Every phase, in the order they open."""
    return list(
        session.scalars(
            select(Phase)
            .options(selectinload(Phase.evalset), selectinload(Phase.board_state))
            .order_by(Phase.opens_at, Phase.id)
        )
    )


def resolve_phase(*, session: Session, name: str | None, now: dt.datetime | None = None) -> Phase:
    """The phase ``name``, or with None the only open one; NotFound naming a phase that does not exist, Conflict
    listing the open phases when none or several are open (the caller must then name one).

    With no phase open, the only phase there is will do: a challenge's one phase keeps its board after it closes, and
    an upload to it is refused with its own reason (its closing time, its publication).
    """
    if name is not None:
        return get_phase(session=session, name=name)
    now = now or utcnow()
    phases = list_phases(session=session)
    open_now = [p for p in phases if is_open(p, now)]
    if len(open_now) == 1:
        return open_now[0]
    if not open_now and len(phases) == 1:
        # A challenge's one phase: its board stays after it closes, and an upload is told why it is closed (its
        # closing time, its publication) rather than that nothing is open.
        return phases[0]
    if not phases:
        raise Conflict(
            "no phase exists yet; submissions open once an organiser registers an evaluation set or creates a phase"
        )
    if not open_now:
        raise Conflict(f"no phase is open now (phases: {', '.join(p.name for p in phases)})")
    listed = ", ".join(p.name for p in open_now)
    raise Conflict(f"{len(open_now)} phases are open ({listed}): name one (--phase NAME, or the form field phase)")


def create_phase(
    *,
    session: Session,
    name: str,
    title: str,
    evalset_name: str,
    opens_at: dt.datetime | None = None,
    closes_at: dt.datetime | None = None,
    daily_quota: int | None = None,
    visibility: str = "public",
    actor: User | None,
    now: dt.datetime | None = None,
) -> Phase:
    """A new phase on the registered set ``evalset_name``, open from ``opens_at`` (default: now) to ``closes_at``
    (None: open-ended), with ``daily_quota`` submissions a participant a day (None: Settings.daily_quota)."""
    if session.scalar(select(Phase.id).where(Phase.name == name)) is not None:
        raise Conflict(f"phase {name!r} exists already")
    evalset = get_evalset(session=session, name=evalset_name)
    if evalset.revealed:
        raise Conflict(
            f"evaluation set {evalset_name!r} is revealed: its hidden episodes are public, so no new phase may score "
            "on it; register a new set (layersched admin evalset new, layersched evalset register)"
        )
    opens_at = opens_at or now or utcnow()
    if closes_at is not None and closes_at <= opens_at:
        raise Conflict(f"phase {name!r} would close at {_utc(closes_at)}, not after it opens at {_utc(opens_at)}")
    if daily_quota is not None and daily_quota < 0:
        raise Conflict(f"phase {name!r}: a daily quota of {daily_quota} is below 0")
    phase = Phase(
        name=name,
        title=title,
        evalset=evalset,
        opens_at=opens_at,
        closes_at=closes_at,
        daily_quota=daily_quota,
        visibility=visibility,
        created_at=now or utcnow(),
    )
    session.add(phase)
    try:
        session.flush()
    except IntegrityError:  # another organiser made it between the check above and this insert
        session.rollback()
        raise Conflict(f"phase {name!r} exists already") from None
    detail = {
        "evalset": evalset.name,
        "opens_at": _utc(opens_at),
        "closes_at": _utc(closes_at) if closes_at else None,
        "daily_quota": daily_quota,
        "visibility": visibility,
    }
    add_log_entry(session, actor, "create_phase", f"phase:{name}", detail)
    session.commit()
    return phase


class PhaseChanges(TypedDict, total=False):
    """What :func:`edit_phase` may change; a key left out stays as it is. ``closes_at`` None: open-ended;
    ``daily_quota`` None: Settings.daily_quota."""

    title: str
    opens_at: dt.datetime
    closes_at: dt.datetime | None
    daily_quota: int | None
    visibility: str


def edit_phase(*, session: Session, name: str, changes: PhaseChanges, actor: User | None) -> Phase:
    """Change a phase's title, times, quota or board visibility (its set stays: its submissions were scored on it).

    The times are checked together, as they will be: a phase must close after it opens. Each change is in the audit
    log with the value before and after.
    """
    phase = get_phase(session=session, name=name)
    opens_at = changes.get("opens_at", phase.opens_at)
    closes_at = changes.get("closes_at", phase.closes_at)
    if closes_at is not None and closes_at <= opens_at:
        raise Conflict(f"phase {name!r} would close at {_utc(closes_at)}, not after it opens at {_utc(opens_at)}")
    quota = changes.get("daily_quota", phase.daily_quota)
    if quota is not None and quota < 0:
        raise Conflict(f"phase {name!r}: a daily quota of {quota} is below 0")
    detail: dict[str, object] = {}
    for field, value in changes.items():
        before = getattr(phase, field)
        if before == value:
            continue
        shown = [_utc(v) if isinstance(v, dt.datetime) else v for v in (before, value)]
        detail[field] = {"from": shown[0], "to": shown[1]}
        setattr(phase, field, value)
    if detail:
        add_log_entry(session, actor, "edit_phase", f"phase:{name}", detail)
    session.commit()
    return phase


def open_phase(*, session: Session, name: str, actor: User | None, now: dt.datetime | None = None) -> Phase:
    """Open the phase now: one not open yet opens at once, a closed one reopens (open-ended until closed again)."""
    phase = get_phase(session=session, name=name)
    now = now or utcnow()
    if phase.opens_at > now:
        phase.opens_at = now
    phase.closes_at = None
    add_log_entry(session, actor, "open_phase", f"phase:{name}", {"opens_at": _utc(phase.opens_at)})
    session.commit()
    return phase


def close_phase(
    *, session: Session, name: str, actor: User | None, at: dt.datetime | None = None, now: dt.datetime | None = None
) -> Phase:
    """Close the phase at ``at`` (default: now; a later time schedules the close)."""
    phase = get_phase(session=session, name=name)
    closes_at = at or now or utcnow()
    if closes_at <= phase.opens_at:
        raise Conflict(
            f"phase {name!r} cannot close at {_utc(closes_at)}, not after it opens at {_utc(phase.opens_at)}"
        )
    phase.closes_at = closes_at
    add_log_entry(session, actor, "close_phase", f"phase:{name}", {"closes_at": _utc(closes_at)})
    session.commit()
    return phase


def reveal_evalset(
    *, session: Session, name: str, actor: User, force: bool = False, now: dt.datetime | None = None
) -> EvalSet:
    """Mark the set revealed (its file is then published: every hidden episode becomes known).

    Refused (Conflict naming them) while a phase on the set is open and its private board unpublished: the phase
    still takes uploads, which could then be fitted to the revealed episodes. ``force`` overrides, and the audit
    log keeps the phases it overrode.
    """
    row = get_evalset(session=session, name=name)
    moment = now or utcnow()
    open_phases = [p.name for p in list_phases(session=session) if p.evalset_id == row.id and is_open(p, moment)]
    if open_phases and not force and not row.revealed:
        listed = ", ".join(open_phases)
        raise Conflict(
            f"evaluation set {name!r} is the set of phase {listed}, open and not published: revealing it now would "
            f"show its hidden episodes while it takes uploads; close the phase or publish its board first (or "
            "--force)"
        )
    if not row.revealed:
        row.revealed, row.revealed_at = True, moment
    detail: dict[str, Any] = {"commitment": row.commitment}
    if open_phases and force:
        detail["forced_while_open"] = open_phases
    add_log_entry(session, actor, "reveal_evalset", f"evalset:{name}", detail)
    session.commit()
    return row
