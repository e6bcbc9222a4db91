"""Events keep the JSON text they were written as; sequences are 64-bit.

The runner encodes each event once and writes the same text to the store, to its events
file and to every event stream, so the store no longer parses and re-encodes it. On SQLite,
which keeps JSON as text already, the tables are rebuilt only to declare the new types.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("events", "doc", type_=sa.Text, postgresql_using="doc::text")
        op.alter_column("events", "sequence", type_=sa.BigInteger)
        op.alter_column("trial_results", "trial", type_=sa.BigInteger)
        return
    with op.batch_alter_table("events") as events:
        events.alter_column("doc", type_=sa.Text, existing_nullable=False)
        events.alter_column("sequence", type_=sa.BigInteger, existing_nullable=False)
    with op.batch_alter_table("trial_results") as trials:
        trials.alter_column("trial", type_=sa.BigInteger, existing_nullable=False)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("trial_results", "trial", type_=sa.Integer)
        op.alter_column("events", "sequence", type_=sa.Integer)
        op.alter_column("events", "doc", type_=sa.JSON, postgresql_using="doc::json")
        return
    with op.batch_alter_table("trial_results") as trials:
        trials.alter_column("trial", type_=sa.Integer, existing_nullable=False)
    with op.batch_alter_table("events") as events:
        events.alter_column("sequence", type_=sa.Integer, existing_nullable=False)
        events.alter_column("doc", type_=sa.JSON, existing_nullable=False)
