"""The store's tables (SQLAlchemy Core); migrations in ``migrations/`` create and evolve them."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("run_id", sa.String(300), primary_key=True),
    sa.Column("tenant", sa.String(160), nullable=False, index=True),
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
    sa.Column("fixture_source", sa.JSON, nullable=True),
    sa.Column("agent_version", sa.String(100), nullable=True),
    # the version of the agent the run evaluated, as the host's configuration declares it
    sa.Column("evidence", sa.String(100), nullable=True),
    # the host's MAC over a completed run it ran (server/evidence.py); NULL: not evidence
    sa.Index("ix_runs_tenant_created", "tenant", "created_at"),
)

events = sa.Table(
    "events",
    metadata,
    sa.Column("run_id", sa.String(300), sa.ForeignKey("runs.run_id"), primary_key=True),
    sa.Column("sequence", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("event_id", sa.String(128), nullable=False, unique=True),
    sa.Column("type", sa.String(120), nullable=False),
    sa.Column("doc", sa.Text, nullable=False),  # the event's JSON text, as it was written
)

trial_results = sa.Table(
    "trial_results",
    metadata,
    sa.Column("run_id", sa.String(300), sa.ForeignKey("runs.run_id"), primary_key=True),
    sa.Column("task_id", sa.String(200), primary_key=True),
    sa.Column("trial", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("invocation_id", sa.String(128), nullable=False),
    sa.Column("data", sa.JSON, nullable=False),
)

deployments = sa.Table(
    "deployments",
    metadata,
    sa.Column("tenant", sa.String(160), primary_key=True),
    sa.Column("agent_id", sa.String(200), primary_key=True),
    sa.Column("version", sa.String(100), primary_key=True),
    sa.Column("state", sa.String(20), nullable=False),
    sa.Column("channels", sa.JSON, nullable=False),
    sa.Column("eval_run_id", sa.String(300), nullable=True),
    sa.Column("rollback_pointer", sa.String(100), nullable=True),
    sa.Column("updated_at", sa.String(40), nullable=False),
    sa.Column("active_channel", sa.String(100), nullable=True),
    # the channel while the version is active, else NULL: unique, one active per channel
    sa.Index("ux_deployments_active_channel", "tenant", "agent_id", "active_channel", unique=True),
)

deployment_heads = sa.Table(
    "deployment_heads",
    metadata,
    sa.Column("tenant", sa.String(160), primary_key=True),
    sa.Column("agent_id", sa.String(200), primary_key=True),
    sa.Column("revision", sa.BigInteger, nullable=False),
    # bumped by compare-and-set with every change of the agent's deployments (store/host.py)
)

deployment_history = sa.Table(
    "deployment_history",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("tenant", sa.String(160), nullable=False),
    sa.Column("agent_id", sa.String(200), nullable=False),
    sa.Column("event", sa.JSON, nullable=False),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Index("ix_deployment_history_agent", "tenant", "agent_id"),
)

idempotency = sa.Table(
    "idempotency",
    metadata,
    sa.Column("tenant", sa.String(160), primary_key=True),
    sa.Column("operation", sa.String(120), primary_key=True),
    sa.Column("key", sa.String(300), primary_key=True),
    sa.Column("request_hash", sa.String(64), nullable=False),
    sa.Column("status_code", sa.Integer, nullable=True),
    sa.Column("response", sa.JSON, nullable=True),
    sa.Column("created_at", sa.String(40), nullable=False),
)

run_leases = sa.Table(
    "run_leases",
    metadata,
    sa.Column("run_id", sa.String(300), sa.ForeignKey("runs.run_id"), primary_key=True),
    sa.Column("owner", sa.String(200), nullable=False, index=True),
    sa.Column("expires_at", sa.Float, nullable=False),
    # seconds since the epoch on the database's clock (see store/leases.py)
    sa.Column("cancel_requested", sa.Boolean, nullable=False, server_default=sa.false()),
    # set by a replica asked to cancel a run another one runs; the owner's heartbeat acts
)

host_secrets = sa.Table(
    "host_secrets",
    metadata,
    sa.Column("name", sa.String(100), primary_key=True),
    sa.Column("value", sa.String(200), nullable=False),
)
