"""Run leases: which host replica runs which run, on a database several replicas share.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A run without a row here (one created before this revision, or by the command line)
    # has no owner: a host replica claims it if it is a host's run left running.
    op.create_table(
        "run_leases",
        sa.Column("run_id", sa.String(300), sa.ForeignKey("runs.run_id"), primary_key=True),
        sa.Column("owner", sa.String(200), nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
        sa.Column("cancel_requested", sa.Boolean, nullable=False, server_default=sa.false()),
    )
    op.create_index("ix_run_leases_owner", "run_leases", ["owner"])


def downgrade() -> None:
    op.drop_index("ix_run_leases_owner", "run_leases")
    op.drop_table("run_leases")
