"""page sessions end at sign-out: a per-token count of sign-outs in the session cookie's MAC

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 13:10:00

``api_tokens.session_generation`` starts at 0 for every token; cookies signed before this revision (whose MAC has
no generation) stop working, and their participants sign in again.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.add_column(sa.Column("session_generation", sa.Integer(), server_default="0", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_column("session_generation")
