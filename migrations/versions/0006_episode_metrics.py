"""an episode's result names its metrics as its track does: ``metrics`` (JSON) and ``primary_value`` replace the lab's
three columns

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 16:20:00

Every row written before this revision is of ``layers-v1`` (the only problem there was), whose metrics are
``mean_completion`` (the primary one), ``p95_completion`` and ``cloud_share``: those values move into ``metrics``
under the same names, and ``primary_value`` is ``mean_completion``. Downgrading takes them back into their columns
(a row of another track has none of them: its columns stay empty).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Written out, not imported from the track: a revision must not change when a track does.
_LAB_METRICS = ("mean_completion", "p95_completion", "cloud_share")


def upgrade() -> None:
    with op.batch_alter_table("episode_results", schema=None) as batch_op:
        batch_op.add_column(sa.Column("metrics", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("primary_value", sa.Float(), nullable=True))
    conn = op.get_bind()
    rows = conn.execute(sa.text("SELECT id, mean_completion, p95_completion, cloud_share FROM episode_results"))
    for row_id, *values in rows.fetchall():
        metrics = {name: value for name, value in zip(_LAB_METRICS, values, strict=True) if value is not None}
        if not metrics:
            continue  # a failed episode: no metrics then, none now
        conn.execute(
            sa.text("UPDATE episode_results SET metrics = :metrics, primary_value = :primary WHERE id = :id"),
            {"metrics": json.dumps(metrics), "primary": metrics.get("mean_completion"), "id": row_id},
        )
    with op.batch_alter_table("episode_results", schema=None) as batch_op:
        for name in _LAB_METRICS:
            batch_op.drop_column(name)


def downgrade() -> None:
    with op.batch_alter_table("episode_results", schema=None) as batch_op:
        for name in _LAB_METRICS:
            batch_op.add_column(sa.Column(name, sa.Float(), nullable=True))
    conn = op.get_bind()
    rows = conn.execute(sa.text("SELECT id, metrics FROM episode_results WHERE metrics IS NOT NULL"))
    for row_id, raw in rows.fetchall():
        metrics = json.loads(raw) if isinstance(raw, str) else raw
        values = {name: metrics.get(name) for name in _LAB_METRICS}
        conn.execute(
            sa.text(
                "UPDATE episode_results SET mean_completion = :mean_completion, p95_completion = :p95_completion, "
                "cloud_share = :cloud_share WHERE id = :id"
            ),
            {**values, "id": row_id},
        )
    with op.batch_alter_table("episode_results", schema=None) as batch_op:
        batch_op.drop_column("primary_value")
        batch_op.drop_column("metrics")
