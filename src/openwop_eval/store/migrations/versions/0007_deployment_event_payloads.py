"""Deployment events as RFC 0082 defines them.

Revision ID: 0007
Revises: 0006

``deployment_history`` holds one ``{type, payload}`` event per change. The payloads written
before this revision carried members the protocol's closed definitions do not have, and
``deployment.state-changed`` named its version ``toVersion`` where the protocol says
``version``. Each stored payload is rewritten to its definition's members:

- ``deployment.promoted``: ``fromState`` is dropped (no such member, and the definition
  admits no extension members either).
- ``deployment.rolled-back``: ``{agentId, fromVersion, toVersion, rollbackPointer}``, the
  pointer being the restored version (``toVersion``); ``toState``, ``fromState``,
  ``channel`` and ``evalRunId`` are dropped.
- ``deployment.state-changed``: ``toVersion`` becomes ``version``; ``channel``,
  ``evalRunId`` and ``fromVersion`` are dropped.

The dropped members are not lost as facts: the deployment records themselves keep each
version's state, channel and eval run. The rules are written out here rather than imported,
so this revision does what it did whatever the code becomes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_BATCH = 500
_history = sa.table(
    "deployment_history",
    sa.column("id", sa.Integer),
    sa.column("event", sa.JSON),
)


def _promoted(payload: dict[str, Any]) -> dict[str, Any]:
    keep = (
        "agentId",
        "toVersion",
        "toState",
        "fromVersion",
        "channel",
        "canaryPercent",
        "evalRunId",
        "approvalGateId",
    )
    return {k: payload[k] for k in keep if k in payload}


def _rolled_back(payload: dict[str, Any]) -> dict[str, Any]:
    keep = ("agentId", "fromVersion", "toVersion", "rollbackPointer", "reason")
    out = {k: payload[k] for k in keep if k in payload}
    if "rollbackPointer" not in out and "toVersion" in out:
        out["rollbackPointer"] = out["toVersion"]
    return out


def _state_changed(payload: dict[str, Any]) -> dict[str, Any]:
    renamed = {("version" if k == "toVersion" else k): v for k, v in payload.items()}
    keep = ("agentId", "version", "fromState", "toState")
    return {k: renamed[k] for k in keep if k in renamed}


Rule = Callable[[dict[str, Any]], dict[str, Any]]

_UPGRADE: dict[str, Rule] = {
    "deployment.promoted": _promoted,
    "deployment.rolled-back": _rolled_back,
    "deployment.state-changed": _state_changed,
}


def _state_changed_back(payload: dict[str, Any]) -> dict[str, Any]:
    return {("toVersion" if k == "version" else k): v for k, v in payload.items()}


_DOWNGRADE: dict[str, Rule] = {"deployment.state-changed": _state_changed_back}


def _rewrite(rules: dict[str, Rule]) -> None:
    """Apply ``rules`` (event type → payload rewrite) to every stored event, a batch of rows
    at a time, writing back only the rows that change."""
    connection = op.get_bind()
    last = 0
    while True:
        rows = connection.execute(
            sa.select(_history.c.id, _history.c.event)
            .where(_history.c.id > last)
            .order_by(_history.c.id)
            .limit(_BATCH)
        ).all()
        if not rows:
            return
        for row_id, stored in rows:
            changed = _rewritten(json.loads(stored) if isinstance(stored, str) else stored, rules)
            if changed is not None:
                connection.execute(
                    _history.update().where(_history.c.id == row_id).values(event=changed)
                )
        last = rows[-1][0]


def _rewritten(event: Any, rules: dict[str, Rule]) -> dict[str, Any] | None:
    """``event`` with its payload rewritten by its type's rule, or None when that changes
    nothing (another type, no payload, a payload already in shape)."""
    if not isinstance(event, dict) or not isinstance(event.get("payload"), dict):
        return None
    rule = rules.get(event["type"]) if isinstance(event.get("type"), str) else None
    if rule is None:
        return None
    changed = {**event, "payload": rule(event["payload"])}
    return changed if changed != event else None


def upgrade() -> None:
    _rewrite(_UPGRADE)


def downgrade() -> None:
    # The members upgrade dropped are not restored (the records keep those facts); the code
    # before this revision reads either shape.
    _rewrite(_DOWNGRADE)
