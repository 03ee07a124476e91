"""phases: a challenge runs in phases, each with its own evaluation set, times, quota and boards

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 19:00:00

Up: today's one challenge becomes the phase ``main`` (title "Main", public, open from its first submission or its
set's registration, no closing time, the default quota) on the current evaluation set (with none marked current, the
newest registered). Every submission belongs to it, and the one leaderboard state row (frozen, snapshots, published)
becomes its state. A database with no evaluation set gets no phase; should it hold submissions or a leaderboard state
all the same, the upgrade stops and says so rather than invent a set.

Down: the phases go. Every submission stays (of whichever phase). The leaderboard state of ``main`` (else of the
earliest phase that has one) becomes the single row id 1 again; the other phases' states cannot be held by the old
schema and are dropped with them.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Written out, not imported: a revision must not change when the code's default phase does.
_DEFAULT_PHASE = "main"


def upgrade() -> None:
    op.create_table(
        "phases",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=50), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("evalset_id", sa.Integer(), nullable=False),
        sa.Column("opens_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closes_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("daily_quota", sa.Integer(), nullable=True),
        sa.Column("visibility", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("visibility IN ('public', 'organisers')", name=op.f("ck_phases_visibility")),
        sa.ForeignKeyConstraint(["evalset_id"], ["evalsets.id"], name=op.f("fk_phases_evalset_id_evalsets")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_phases")),
        sa.UniqueConstraint("name", name=op.f("uq_phases_name")),
    )
    with op.batch_alter_table("phases", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_phases_evalset_id"), ["evalset_id"], unique=False)

    phase_id = _default_phase()
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("phase_id", sa.Integer(), nullable=True))
    with op.batch_alter_table("leaderboard_state", schema=None) as batch_op:
        batch_op.add_column(sa.Column("phase_id", sa.Integer(), nullable=True))
    if phase_id is not None:
        conn = op.get_bind()
        conn.execute(sa.text("UPDATE submissions SET phase_id = :phase"), {"phase": phase_id})
        conn.execute(sa.text("UPDATE leaderboard_state SET phase_id = :phase"), {"phase": phase_id})
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.alter_column("phase_id", existing_type=sa.Integer(), nullable=False)
        batch_op.create_index(batch_op.f("ix_submissions_phase_id"), ["phase_id"], unique=False)
        batch_op.create_foreign_key(batch_op.f("fk_submissions_phase_id_phases"), "phases", ["phase_id"], ["id"])
    with op.batch_alter_table("leaderboard_state", schema=None) as batch_op:
        batch_op.alter_column("phase_id", existing_type=sa.Integer(), nullable=False)
        batch_op.create_unique_constraint(batch_op.f("uq_leaderboard_state_phase_id"), ["phase_id"])
        batch_op.create_foreign_key(
            batch_op.f("fk_leaderboard_state_phase_id_phases"), "phases", ["phase_id"], ["id"], ondelete="CASCADE"
        )


def _default_phase() -> int | None:
    """Insert the phase ``main`` on today's set and return its id; None when there is no set (and nothing to hold)."""
    conn = op.get_bind()
    evalset = conn.execute(
        sa.text("SELECT id, created_at FROM evalsets ORDER BY current DESC, id DESC LIMIT 1")
    ).one_or_none()
    if evalset is None:
        held = [
            table
            for table in ("submissions", "leaderboard_state")
            if conn.execute(sa.text(f"SELECT COUNT(*) FROM {table}")).scalar_one()
        ]
        if held:
            raise RuntimeError(
                f"the database holds rows in {', '.join(held)} but no evaluation set: register the set they were "
                "made for (layersched admin evalset register) before upgrading, so the default phase has its set"
            )
        return None
    evalset_id, registered = evalset
    first = conn.execute(sa.text("SELECT MIN(created_at) FROM submissions")).scalar_one()
    # Compared as stored (SQLite returns text): the phase must be open at every submission it holds.
    opens_at = min(registered, first) if first is not None else registered
    conn.execute(
        sa.text(
            "INSERT INTO phases (name, title, evalset_id, opens_at, closes_at, daily_quota, visibility, created_at) "
            "VALUES (:name, 'Main', :evalset, :opens, NULL, NULL, 'public', :opens)"
        ),
        {"name": _DEFAULT_PHASE, "evalset": evalset_id, "opens": opens_at},
    )
    phase_id: int = conn.execute(
        sa.text("SELECT id FROM phases WHERE name = :name"), {"name": _DEFAULT_PHASE}
    ).scalar_one()
    return phase_id


def downgrade() -> None:
    conn = op.get_bind()
    kept = conn.execute(
        sa.text(
            "SELECT s.id FROM leaderboard_state s JOIN phases p ON p.id = s.phase_id "
            "ORDER BY CASE WHEN p.name = :name THEN 0 ELSE 1 END, p.id LIMIT 1"
        ),
        {"name": _DEFAULT_PHASE},
    ).scalar_one_or_none()
    conn.execute(sa.text("DELETE FROM leaderboard_state WHERE id != :kept"), {"kept": kept if kept is not None else -1})
    if kept is not None:
        conn.execute(sa.text("UPDATE leaderboard_state SET id = 1 WHERE id = :kept"), {"kept": kept})
    with op.batch_alter_table("leaderboard_state", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_leaderboard_state_phase_id_phases"), type_="foreignkey")
        batch_op.drop_constraint(batch_op.f("uq_leaderboard_state_phase_id"), type_="unique")
        batch_op.drop_column("phase_id")
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_submissions_phase_id_phases"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_submissions_phase_id"))
        batch_op.drop_column("phase_id")
    with op.batch_alter_table("phases", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_phases_evalset_id"))
    op.drop_table("phases")
