"""The audit log: who did what to which row, for organisers to read back."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from layersched.server.models import AUDIT_TARGET_LENGTH, AuditLogEntry, User


def _entry(actor: User | None, action: str, target: str, detail: dict[str, Any]) -> AuditLogEntry:
    # PostgreSQL refuses a target longer than its column, and the organiser's action fails with it (a team named
    # with 96 characters once made every change to it a 500); SQLite would store it. Refused here on both, so that
    # a test on SQLite fails as production would.
    if len(target) > AUDIT_TARGET_LENGTH:
        raise ValueError(f"audit target {target[:40]!r}... has {len(target)} characters, over {AUDIT_TARGET_LENGTH}")
    return AuditLogEntry(
        actor_id=actor.id if actor else None,
        actor=actor.name if actor else "system",
        action=action,
        target=target,
        detail=detail,
    )


def add_log_entry(session: Session, actor: User | None, action: str, target: str, detail: dict[str, Any]) -> None:
    """Add an entry to the caller's transaction, so it is committed with the change it records, or not at all."""
    session.add(_entry(actor, action, target, detail))


def log_action(
    *, session: Session, actor: User | None, action: str, target: str, detail: dict[str, Any] | None = None
) -> AuditLogEntry:
    """Record an organiser action that no other storage function records (e.g. from the admin CLI)."""
    entry = _entry(actor, action, target, detail or {})
    session.add(entry)
    session.commit()
    return entry


def list_audit_log(*, session: Session, offset: int = 0, limit: int = 50) -> tuple[list[AuditLogEntry], int]:
    total = session.scalar(select(func.count(AuditLogEntry.id))) or 0
    rows = session.scalars(select(AuditLogEntry).order_by(AuditLogEntry.id.desc()).offset(offset).limit(limit)).all()
    return list(rows), total
