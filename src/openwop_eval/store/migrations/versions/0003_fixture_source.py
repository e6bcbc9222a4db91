"""A run's fixture source, stored with it so every resume serves exactly what it started with.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable: a run stored before this revision has no recorded source, and its resume
    # ends it as failed rather than guess which fixtures it had.
    op.add_column("runs", sa.Column("fixture_source", sa.JSON, nullable=True))


def downgrade() -> None:
    op.drop_column("runs", "fixture_source")
