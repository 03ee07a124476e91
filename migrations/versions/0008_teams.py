"""teams: participants compete in teams (one quota, one leaderboard row, one final selection per team)

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 22:30:00

Up: three new tables, empty: ``teams``, ``team_members`` (one row per stay of a user in a team; a partial unique
index keeps a user in one team at a time) and ``team_invites`` (one-use codes, stored as their SHA-256). Nothing
existing changes: every participant competes alone until they form or join a team, as before.

Down: the tables go with what they hold. Submissions belong to their authors, not to teams, so none is lost: each
author's submissions rank under the author's own name again.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "teams",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["created_by_id"], ["users.id"], name=op.f("fk_teams_created_by_id_users"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_teams")),
        sa.UniqueConstraint("name", name=op.f("uq_teams_name")),
    )
    op.create_table(
        "team_members",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("team_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("joined_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("left_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["team_id"], ["teams.id"], name=op.f("fk_team_members_team_id_teams"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_team_members_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_team_members")),
    )
    with op.batch_alter_table("team_members", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_team_members_team_id"), ["team_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_team_members_user_id"), ["user_id"], unique=False)
        batch_op.create_index(
            "uq_team_members_active_user",
            ["user_id"],
            unique=True,
            sqlite_where=sa.text("left_at IS NULL"),
            postgresql_where=sa.text("left_at IS NULL"),
        )
    op.create_table(
        "team_invites",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("team_id", sa.Integer(), nullable=False),
        sa.Column("code_sha256", sa.String(length=64), nullable=False),
        sa.Column("created_by_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("used_by_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["created_by_id"], ["users.id"], name=op.f("fk_team_invites_created_by_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["team_id"], ["teams.id"], name=op.f("fk_team_invites_team_id_teams"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["used_by_id"], ["users.id"], name=op.f("fk_team_invites_used_by_id_users"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_team_invites")),
        sa.UniqueConstraint("code_sha256", name=op.f("uq_team_invites_code_sha256")),
    )
    with op.batch_alter_table("team_invites", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_team_invites_team_id"), ["team_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("team_invites", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_team_invites_team_id"))
    op.drop_table("team_invites")
    with op.batch_alter_table("team_members", schema=None) as batch_op:
        batch_op.drop_index("uq_team_members_active_user")
        batch_op.drop_index(batch_op.f("ix_team_members_user_id"))
        batch_op.drop_index(batch_op.f("ix_team_members_team_id"))
    op.drop_table("team_members")
    op.drop_table("teams")
