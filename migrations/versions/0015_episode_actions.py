"""the accepted actions of episodes whose workload is public, the scenarios they replay on, the reference runs
(issue 33)

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04 10:00:00

Up: ``replay_scenarios`` (a scenario's wire form by content hash, stored once) and ``episode_actions`` (one row per
episode result whose workload anyone can regenerate: its seed, its actions deflated, the reference baseline's
record on it), and ``action_traces`` (actions by their trace's hash, stored once: the reference baseline's runs of
those episodes), from which the pages replay and draw schedules. Existing episodes have none: their pages say so.
Down: the three tables go.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "replay_scenarios",
        sa.Column("scenario_hash", sa.String(length=64), nullable=False),
        sa.Column("track", sa.String(length=50), nullable=False),
        sa.Column("wire", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("scenario_hash", name=op.f("pk_replay_scenarios")),
    )
    op.create_table(
        "action_traces",
        sa.Column("trace_hash", sa.String(length=64), nullable=False),
        sa.Column("actions", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("trace_hash", name=op.f("pk_action_traces")),
    )
    op.create_table(
        "episode_actions",
        sa.Column("episode_result_id", sa.Integer(), nullable=False),
        sa.Column("scenario_hash", sa.String(length=64), nullable=False),
        sa.Column("seed", sa.Text(), nullable=False),
        sa.Column("actions", sa.LargeBinary(), nullable=False),
        sa.Column("reference", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["episode_result_id"],
            ["episode_results.id"],
            name=op.f("fk_episode_actions_episode_result_id_episode_results"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["scenario_hash"],
            ["replay_scenarios.scenario_hash"],
            name=op.f("fk_episode_actions_scenario_hash_replay_scenarios"),
        ),
        sa.PrimaryKeyConstraint("episode_result_id", name=op.f("pk_episode_actions")),
    )
    with op.batch_alter_table("episode_actions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_episode_actions_scenario_hash"), ["scenario_hash"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("episode_actions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_episode_actions_scenario_hash"))
    op.drop_table("episode_actions")
    op.drop_table("action_traces")
    op.drop_table("replay_scenarios")
