"""evaluation sets name their track: the scheduling problem whose scenarios they hold

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 16:00:00

``evalsets.track`` is a track id (``layersched.sim.tracks``). Every set registered before this revision is on
``layers-v1``, the only problem there was, so that is the server default the existing rows get.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("evalsets", schema=None) as batch_op:
        # Written out, not imported: a revision must not change when the registry's default does.
        batch_op.add_column(sa.Column("track", sa.String(length=50), server_default="layers-v1", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("evalsets", schema=None) as batch_op:
        batch_op.drop_column("track")
