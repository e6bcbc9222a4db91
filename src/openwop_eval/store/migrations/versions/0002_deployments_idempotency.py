"""Agent deployments with their history, and the idempotency cache.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "deployments",
        sa.Column("tenant", sa.String(160), primary_key=True),
        sa.Column("agent_id", sa.String(200), primary_key=True),
        sa.Column("version", sa.String(100), primary_key=True),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("channels", sa.JSON, nullable=False),
        sa.Column("eval_run_id", sa.String(300), nullable=True),
        sa.Column("rollback_pointer", sa.String(100), nullable=True),
        sa.Column("updated_at", sa.String(40), nullable=False),
    )
    op.create_table(
        "deployment_history",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("tenant", sa.String(160), nullable=False),
        sa.Column("agent_id", sa.String(200), nullable=False),
        sa.Column("event", sa.JSON, nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
    )
    op.create_index("ix_deployment_history_agent", "deployment_history", ["tenant", "agent_id"])
    op.create_table(
        "idempotency",
        sa.Column("tenant", sa.String(160), primary_key=True),
        sa.Column("operation", sa.String(120), primary_key=True),
        sa.Column("key", sa.String(300), primary_key=True),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("status_code", sa.Integer, nullable=True),
        sa.Column("response", sa.JSON, nullable=True),
        sa.Column("created_at", sa.String(40), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("idempotency")
    op.drop_index("ix_deployment_history_agent", "deployment_history")
    op.drop_table("deployment_history")
    op.drop_table("deployments")
