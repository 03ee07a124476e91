"""participant-safe results: the failing step of an episode, the error text and the progress a participant may read

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 09:30:00

A hidden (keyed) episode's message can carry text the policy wrote about the hidden workload (a traceback, the
repr of a bad return value); participants must see only its status and step. ``episode_results.step`` holds the
step, ``evaluations.public_error_message`` the error as the participant may read it. Existing failed evaluations
without hidden episodes keep their message for participants; the others show their category only.
``evaluations.public_progress_done`` counts the recorded episodes that are not hidden: while an evaluation runs,
the participant's progress shows these only (a policy could spell bits in how long each hidden episode takes).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("episode_results", schema=None) as batch_op:
        batch_op.add_column(sa.Column("step", sa.Integer(), nullable=True))
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("public_error_message", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("public_progress_done", sa.Integer(), nullable=False, server_default="0"))
    op.execute(
        "UPDATE evaluations SET public_progress_done = (SELECT count(*) FROM episode_results r "
        "WHERE r.evaluation_id = evaluations.id AND NOT r.hidden)"
    )
    op.execute(
        "UPDATE evaluations SET public_error_message = error_message WHERE error_message IS NOT NULL AND NOT EXISTS "
        "(SELECT 1 FROM episode_results r WHERE r.evaluation_id = evaluations.id AND r.hidden)"
    )


def downgrade() -> None:
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.drop_column("public_progress_done")
        batch_op.drop_column("public_error_message")
    with op.batch_alter_table("episode_results", schema=None) as batch_op:
        batch_op.drop_column("step")
