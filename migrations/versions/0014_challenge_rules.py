"""challenge rules: the rules a challenge file applies (team size, deadlines, final selection) override the settings

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03 14:00:00

Up: one new table, empty: ``challenge_rules`` (at most one row). Until an organiser applies a challenge file
(``layersched admin challenge apply``), every rule is the ``LAYERSCHED_*`` setting it was before.

Down: the table goes; the settings decide again.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "challenge_rules",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_deadline", sa.DateTime(timezone=True), nullable=True),
        sa.Column("final_submissions", sa.Integer(), nullable=True),
        sa.Column("team_max_size", sa.Integer(), nullable=True),
        sa.Column("team_invite_hours", sa.Float(), nullable=True),
        sa.Column("team_merge_deadline", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_challenge_rules")),
    )


def downgrade() -> None:
    op.drop_table("challenge_rules")
