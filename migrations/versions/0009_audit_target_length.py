"""an audit entry's target holds the longest name: ``audit_log.target`` from 100 to 150 characters

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03 10:00:00

A target is a kind and a name (``team:<name>``, ``evalset:<name>``): with names of up to 100 characters, a team
named with 96 or more overflowed the column, and every organiser change to it failed on PostgreSQL (issue 30).

Down: back to 100 characters. A target longer than that is cut to its first 100 (PostgreSQL would refuse to
shorten the column otherwise); the entry's action, actor, time and detail stay whole.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("audit_log", schema=None) as batch_op:
        batch_op.alter_column(
            "target", existing_type=sa.String(length=100), type_=sa.String(length=150), existing_nullable=False
        )


def downgrade() -> None:
    op.execute(sa.text("UPDATE audit_log SET target = substr(target, 1, 100) WHERE length(target) > 100"))
    with op.batch_alter_table("audit_log", schema=None) as batch_op:
        batch_op.alter_column(
            "target", existing_type=sa.String(length=150), type_=sa.String(length=100), existing_nullable=False
        )
