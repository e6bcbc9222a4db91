"""Runs, their append-only events, and per-trial diagnostics.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("run_id", sa.String(300), primary_key=True),
        sa.Column("tenant", sa.String(160), nullable=False),
        sa.Column("mode", sa.String(20), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("suite_id", sa.String(200), nullable=False),
        sa.Column("suite_version", sa.String(40), nullable=False),
        sa.Column("agent_spec", sa.Text, nullable=False),
        sa.Column("agent_id", sa.String(200), nullable=False),
        sa.Column("suite_doc", sa.JSON, nullable=False),
        sa.Column("options", sa.JSON, nullable=False),
        sa.Column("summary", sa.JSON, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("updated_at", sa.String(40), nullable=False),
    )
    op.create_index("ix_runs_tenant", "runs", ["tenant"])
    op.create_index("ix_runs_tenant_created", "runs", ["tenant", "created_at"])
    op.create_table(
        "events",
        sa.Column("run_id", sa.String(300), sa.ForeignKey("runs.run_id"), primary_key=True),
        sa.Column("sequence", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("event_id", sa.String(128), nullable=False, unique=True),
        sa.Column("type", sa.String(120), nullable=False),
        sa.Column("doc", sa.JSON, nullable=False),
    )
    op.create_table(
        "trial_results",
        sa.Column("run_id", sa.String(300), sa.ForeignKey("runs.run_id"), primary_key=True),
        sa.Column("task_id", sa.String(200), primary_key=True),
        sa.Column("trial", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("invocation_id", sa.String(128), nullable=False),
        sa.Column("data", sa.JSON, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("trial_results")
    op.drop_table("events")
    op.drop_index("ix_runs_tenant_created", "runs")
    op.drop_index("ix_runs_tenant", "runs")
    op.drop_table("runs")
