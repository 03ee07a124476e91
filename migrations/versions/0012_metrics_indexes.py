"""indexes from which a metrics scrape reads its counts: by kind and state, newest evaluations, wall times

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03 13:00:00

A scrape of ``/metrics`` read every evaluation row into Python (133 ms at 20,000 rows, issue 30); it now runs
aggregate queries that these indexes answer alone. Down: the indexes go.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_NOT_AUDIT = "kind <> 'audit'"


def upgrade() -> None:
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.create_index("ix_evaluations_kind_state", ["kind", "state"], unique=False)
        batch_op.create_index(
            "ix_evaluations_newest",
            ["submission_id", "id", "state"],
            unique=False,
            sqlite_where=sa.text(_NOT_AUDIT),
            postgresql_where=sa.text(_NOT_AUDIT),
        )
        batch_op.create_index("ix_evaluations_durations", ["state", "started_at", "finished_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.drop_index("ix_evaluations_durations")
        batch_op.drop_index("ix_evaluations_newest")
        batch_op.drop_index("ix_evaluations_kind_state")
