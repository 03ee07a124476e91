"""one live team per name compared case-insensitively; a team renamed when the member whose name it bore left
(review of issue 30, items 5 and 6)

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-05 10:00:00

Up: ``teams.renamed_from`` (the name a renamed team bore, None for the others). The unique index on the names of
live teams (``uq_teams_live_name``) becomes one on their lower-case names (``uq_teams_live_lower_name``): the
application compared them case-insensitively, but two requests racing could still make ``Twin`` and ``TWIN``. Live
teams that break the new rule are renamed first, as ``storage.teams`` renames a team: ``team-<id>``, the name they
bore in ``renamed_from``. These are each later team of a case-insensitive pair (the oldest keeps its name), and
each team that bears the name of a participant who is not in it (the founder who named it after themselves left:
the board showed a team "alice" without alice).
Down: the index on the exact names comes back and ``renamed_from`` goes; renamed teams keep their new names.

A later migration that rebuilds ``teams`` on SQLite (batch mode: dropping or altering a column) must drop
``uq_teams_live_lower_name`` before and create it again after, as ``downgrade`` does: SQLAlchemy cannot reflect an
expression index on SQLite, so the rebuilt table would be without it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_LIVE = "dissolved_at IS NULL"
_RENAME = "UPDATE teams SET renamed_from = name, name = 'team-' || CAST(id AS VARCHAR(12)) WHERE dissolved_at IS NULL "


def upgrade() -> None:
    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.add_column(sa.Column("renamed_from", sa.String(length=100), nullable=True))
    op.execute(
        sa.text(
            _RENAME + "AND EXISTS (SELECT 1 FROM teams older WHERE older.dissolved_at IS NULL "
            "AND lower(older.name) = lower(teams.name) AND older.id < teams.id)"
        )
    )
    op.execute(
        sa.text(
            _RENAME + "AND EXISTS (SELECT 1 FROM users u WHERE lower(u.name) = lower(teams.name) "
            "AND NOT EXISTS (SELECT 1 FROM team_members m WHERE m.team_id = teams.id AND m.user_id = u.id "
            "AND m.left_at IS NULL))"
        )
    )
    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.drop_index("uq_teams_live_name")
    op.create_index(
        "uq_teams_live_lower_name",
        "teams",
        [sa.text("lower(name)")],
        unique=True,
        sqlite_where=sa.text(_LIVE),
        postgresql_where=sa.text(_LIVE),
    )


def downgrade() -> None:
    # Dropped before the batch: rebuilding ``teams`` on SQLite reflects it, and SQLAlchemy cannot reflect an
    # expression index (it warns, and the copy would not have it).
    op.drop_index("uq_teams_live_lower_name", table_name="teams")
    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.create_index(
            "uq_teams_live_name",
            ["name"],
            unique=True,
            sqlite_where=sa.text(_LIVE),
            postgresql_where=sa.text(_LIVE),
        )
        batch_op.drop_column("renamed_from")
