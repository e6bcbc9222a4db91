"""The deploy gate's evidence and serialized deployments.

Revision ID: 0006
Revises: 0005

- ``runs.agent_version``: the version of the agent a run evaluated (a host's agent
  configuration declares it); ``runs.evidence``: the host's MAC over what a completed run
  evaluated, under which policy, and its summary (server/evidence.py). A run without one
  is never evidence for a promotion.
- ``deployment_heads``: one row per (tenant, agent) whose ``revision`` every change bumps
  by compare-and-set, so concurrent changes of one agent's deployments serialize and a
  change planned on a stale view is refused instead of written.
- ``deployments.active_channel``: the channel of the active version, NULL otherwise, unique
  per agent: the database itself refuses a second active version on a channel.
- ``host_secrets``: the host's evidence key when none is configured.
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("agent_version", sa.String(100), nullable=True))
        batch.add_column(sa.Column("evidence", sa.String(100), nullable=True))
    with op.batch_alter_table("deployments") as batch:
        batch.add_column(sa.Column("active_channel", sa.String(100), nullable=True))
    # A store from before this revision may hold several active versions of one agent
    # (the race this revision closes): the newest stays active, the others are deprecated.
    connection = op.get_bind()
    rows = connection.execute(
        sa.text(
            "SELECT tenant, agent_id, version, channels FROM deployments"
            " WHERE state = 'active' ORDER BY updated_at DESC, version DESC"
        )
    ).all()
    seen: set[tuple[str, str, str]] = set()
    for tenant, agent_id, version, channels in rows:
        listed = json.loads(channels) if isinstance(channels, str) else channels
        channel = listed[0] if isinstance(listed, list) and listed else "stable"
        if (tenant, agent_id, channel) in seen:
            state, channel = "deprecated", None
        else:
            seen.add((tenant, agent_id, channel))
            state = "active"
        connection.execute(
            sa.text(
                "UPDATE deployments SET state = :state, active_channel = :channel"
                " WHERE tenant = :tenant AND agent_id = :agent AND version = :version"
            ),
            {
                "state": state,
                "channel": channel,
                "tenant": tenant,
                "agent": agent_id,
                "version": version,
            },
        )
    op.create_index(
        "ux_deployments_active_channel",
        "deployments",
        ["tenant", "agent_id", "active_channel"],
        unique=True,
    )
    op.create_table(
        "deployment_heads",
        sa.Column("tenant", sa.String(160), primary_key=True),
        sa.Column("agent_id", sa.String(200), primary_key=True),
        sa.Column("revision", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "host_secrets",
        sa.Column("name", sa.String(100), primary_key=True),
        sa.Column("value", sa.String(200), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("host_secrets")
    op.drop_table("deployment_heads")
    op.drop_index("ux_deployments_active_channel", "deployments")
    with op.batch_alter_table("deployments") as batch:
        batch.drop_column("active_channel")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("evidence")
        batch.drop_column("agent_version")
