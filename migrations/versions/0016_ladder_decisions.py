"""ladder decisions: what the Ladder showed of each submission's public score, written once (issue 30's review)

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05 10:00:00

Up: one new table, empty: ``ladder_decisions``. The first board built after the upgrade judges every scored
submission in creation order, as each board did before, and writes those verdicts down: what the board showed
before the upgrade is what it shows after, and from then on nothing re-judges it.

Down: the table goes; the boards re-judge every submission in creation order each time again.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ladder_decisions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("evalset_name", sa.String(length=100), nullable=False),
        sa.Column("evaluation_id", sa.Integer(), nullable=False),
        sa.Column("shown_evaluation_id", sa.Integer(), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_ladder_decisions_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["evaluation_id"], ["evaluations.id"], name=op.f("fk_ladder_decisions_evaluation_id_evaluations")
        ),
        sa.ForeignKeyConstraint(
            ["shown_evaluation_id"],
            ["evaluations.id"],
            name=op.f("fk_ladder_decisions_shown_evaluation_id_evaluations"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ladder_decisions")),
        sa.UniqueConstraint("submission_id", "evalset_name", name="uq_ladder_decisions_submission"),
    )


def downgrade() -> None:
    op.drop_table("ladder_decisions")
