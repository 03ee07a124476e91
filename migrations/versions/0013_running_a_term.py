"""running a term (issue 32): disabled users, sign-in links, quota grants, webhooks and their outbox, alerts, workers'
heartbeats

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03 09:34:48

Up: ``users.disabled_at`` (null: every existing user stays active) and six new tables, empty: ``signin_links``
(one-time links to the pages, stored as their SHA-256), ``quota_grants`` (extra submissions for a participant or a
team in a phase on a day), ``webhooks`` and ``notifications`` (the outbox of messages to them), ``alert_states`` and
``worker_heartbeats``. Nothing existing changes meaning.

Down: the tables go with what they hold, and disabled users are active again (their revoked tokens stay revoked).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "alert_states",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=50), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("since", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_states")),
        sa.UniqueConstraint("kind", name=op.f("uq_alert_states_kind")),
    )
    op.create_table(
        "worker_heartbeats",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("worker_id", sa.String(length=200), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("beat_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_worker_heartbeats")),
        sa.UniqueConstraint("worker_id", name=op.f("uq_worker_heartbeats_worker_id")),
    )
    with op.batch_alter_table("worker_heartbeats", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_worker_heartbeats_beat_at"), ["beat_at"], unique=False)

    op.create_table(
        "signin_links",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("code_sha256", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_by_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["created_by_id"], ["users.id"], name=op.f("fk_signin_links_created_by_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_signin_links_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_signin_links")),
        sa.UniqueConstraint("code_sha256", name=op.f("uq_signin_links_code_sha256")),
    )
    with op.batch_alter_table("signin_links", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_signin_links_user_id"), ["user_id"], unique=False)

    op.create_table(
        "webhooks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("format", sa.String(length=16), nullable=False),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by_id", sa.Integer(), nullable=True),
        sa.CheckConstraint("format IN ('json', 'slack')", name=op.f("ck_webhooks_format")),
        sa.ForeignKeyConstraint(
            ["created_by_id"], ["users.id"], name=op.f("fk_webhooks_created_by_id_users"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhooks")),
    )
    op.create_table(
        "notifications",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("webhook_id", sa.Integer(), nullable=False),
        sa.Column("event", sa.String(length=50), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("failed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["webhook_id"], ["webhooks.id"], name=op.f("fk_notifications_webhook_id_webhooks"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notifications")),
    )
    with op.batch_alter_table("notifications", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_notifications_next_attempt_at"), ["next_attempt_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_notifications_webhook_id"), ["webhook_id"], unique=False)

    op.create_table(
        "quota_grants",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("phase_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("team_id", sa.Integer(), nullable=True),
        sa.Column("day", sa.DateTime(timezone=True), nullable=False),
        sa.Column("extra", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by_id", sa.Integer(), nullable=True),
        sa.CheckConstraint("(user_id IS NULL) <> (team_id IS NULL)", name=op.f("ck_quota_grants_one_target")),
        sa.CheckConstraint("extra > 0", name=op.f("ck_quota_grants_extra_positive")),
        sa.ForeignKeyConstraint(
            ["created_by_id"], ["users.id"], name=op.f("fk_quota_grants_created_by_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["phase_id"], ["phases.id"], name=op.f("fk_quota_grants_phase_id_phases"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["team_id"], ["teams.id"], name=op.f("fk_quota_grants_team_id_teams"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_quota_grants_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_quota_grants")),
    )
    with op.batch_alter_table("quota_grants", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_quota_grants_phase_id"), ["phase_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_quota_grants_team_id"), ["team_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_quota_grants_user_id"), ["user_id"], unique=False)

    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("disabled_at")

    with op.batch_alter_table("quota_grants", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_quota_grants_user_id"))
        batch_op.drop_index(batch_op.f("ix_quota_grants_team_id"))
        batch_op.drop_index(batch_op.f("ix_quota_grants_phase_id"))

    op.drop_table("quota_grants")
    with op.batch_alter_table("notifications", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_notifications_webhook_id"))
        batch_op.drop_index(batch_op.f("ix_notifications_next_attempt_at"))

    op.drop_table("notifications")
    op.drop_table("webhooks")
    with op.batch_alter_table("signin_links", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_signin_links_user_id"))

    op.drop_table("signin_links")
    with op.batch_alter_table("worker_heartbeats", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_worker_heartbeats_beat_at"))

    op.drop_table("worker_heartbeats")
    op.drop_table("alert_states")
