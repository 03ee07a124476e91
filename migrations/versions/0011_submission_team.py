"""a submission keeps the team it was made under: ``submissions.team_id``, whose Ladder it was a probe of

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03 12:00:00

Up: ``submissions.team_id`` (None: made alone) with its index, filled for existing submissions from the membership
history: the team whose stay of the owner covers the submission's time (joined at or before it, not left by it).
The Ladder then shows each submission what it showed the competitor it was made under, whoever joins or leaves
later (issue 30: a member who left read the exact score of a probe the team's Ladder had hidden).

Down: the column goes; the boards group submissions by their owners' teams now, as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("team_id", sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f("ix_submissions_team_id"), ["team_id"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_submissions_team_id_teams"), "teams", ["team_id"], ["id"], ondelete="SET NULL"
        )
    op.execute(
        sa.text(
            "UPDATE submissions SET team_id = (SELECT m.team_id FROM team_members m "
            "WHERE m.user_id = submissions.owner_id AND m.joined_at <= submissions.created_at "
            "AND (m.left_at IS NULL OR m.left_at > submissions.created_at) ORDER BY m.id DESC LIMIT 1)"
        )
    )


def downgrade() -> None:
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_submissions_team_id_teams"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_submissions_team_id"))
        batch_op.drop_column("team_id")
