"""a team whose last member left is dissolved and frees its name: ``teams.dissolved_at``, one live team per name

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03 11:00:00

Up: ``teams.dissolved_at`` (None: live); the unique constraint on ``teams.name`` becomes a unique index on the names
of live teams only (``uq_teams_live_name``), so that a dissolved team's name can be taken again, by a team or a user
(issue 30: a participant who made and left a team ``ZOE`` kept organisers from creating the user ``zoe``); an index
on ``teams.created_by_id``, which counts the teams a participant founded. Teams that had members and have none now
are dissolved at the time their last member left (an organiser may have removed them: from now on such a team stays
live, but the rows do not say who ended each stay); a team an organiser made and never filled stays live.

Down: the dissolved teams stay as teams without members. One whose name another team took since is renamed
``<its first 80 characters> ~<its id>`` so that every name is unique again, as the restored constraint needs.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_LIVE = "dissolved_at IS NULL"


def upgrade() -> None:
    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.add_column(sa.Column("dissolved_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.drop_constraint("uq_teams_name", type_="unique")
        batch_op.create_index(
            "uq_teams_live_name",
            ["name"],
            unique=True,
            sqlite_where=sa.text(_LIVE),
            postgresql_where=sa.text(_LIVE),
        )
        batch_op.create_index(batch_op.f("ix_teams_created_by_id"), ["created_by_id"], unique=False)
    op.execute(
        sa.text(
            "UPDATE teams SET dissolved_at = (SELECT max(m.left_at) FROM team_members m WHERE m.team_id = teams.id) "
            "WHERE EXISTS (SELECT 1 FROM team_members m WHERE m.team_id = teams.id) "
            "AND NOT EXISTS (SELECT 1 FROM team_members m WHERE m.team_id = teams.id AND m.left_at IS NULL)"
        )
    )


def downgrade() -> None:
    op.execute(
        sa.text(
            "UPDATE teams SET name = substr(name, 1, 80) || ' ~' || CAST(id AS VARCHAR(12)) "
            "WHERE dissolved_at IS NOT NULL "
            "AND EXISTS (SELECT 1 FROM teams other WHERE other.name = teams.name AND other.id <> teams.id)"
        )
    )
    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_teams_created_by_id"))
        batch_op.drop_index("uq_teams_live_name")
        batch_op.create_unique_constraint("uq_teams_name", ["name"])
        batch_op.drop_column("dissolved_at")
