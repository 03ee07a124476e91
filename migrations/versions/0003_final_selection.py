"""final selection: when a submission was selected, and the private leaderboard as it was published

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 14:00:00

A participant now selects up to ``Settings.final_submissions`` submissions for the final ranking (before: one).
``submissions.selected_at`` orders those choices and moves the leaderboard's cache key on each change; submissions
selected under the old rule get their creation time, the best this database knows. ``leaderboard_state.
private_snapshot`` is the private board taken at publication. A board published before this revision has none and
keeps being built live, as it was; publishing again does not replace it (publication is once).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("selected_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("leaderboard_state", schema=None) as batch_op:
        batch_op.add_column(sa.Column("private_snapshot", sa.JSON(), nullable=True))
    op.execute("UPDATE submissions SET selected_at = created_at WHERE selected")


def downgrade() -> None:
    with op.batch_alter_table("leaderboard_state", schema=None) as batch_op:
        batch_op.drop_column("private_snapshot")
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_column("selected_at")
