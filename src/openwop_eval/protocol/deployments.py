"""Agent deployments as data: the RFC 0082 state machine, one table, and what a transition
changes. Pure: the host reads the records, asks :func:`plan`, and writes what it returns.

States: draft → test → staged → active (forward, one or several steps at a time, each a
``promote``), active ↔ paused, active/paused → deprecated, active → rolled-back (the
version it replaced becomes active again). One version is active per channel; promoting
another to active on it deprecates the previous one and records it as the rollback pointer.
The forward states are ordered: a gate on one holds for every state past it
(:func:`lands_gated`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..core import OpenwopEvalError

STATES = ("draft", "test", "staged", "active", "paused", "deprecated", "rolled-back")
TRANSITIONS = ("promote", "pause", "deprecate", "rollback", "adjust-canary")
FORWARD = ("draft", "test", "staged", "active")
"""The states a promotion walks, in order."""

PROMOTED = "deployment.promoted"
ROLLED_BACK = "deployment.rolled-back"
STATE_CHANGED = "deployment.state-changed"
EVENT_MEMBERS: dict[str, tuple[str, ...]] = {
    PROMOTED: (
        "agentId",
        "toVersion",
        "toState",
        "fromVersion",
        "channel",
        "canaryPercent",
        "evalRunId",
        "approvalGateId",
    ),
    ROLLED_BACK: ("agentId", "fromVersion", "toVersion", "rollbackPointer", "reason"),
    STATE_CHANGED: ("agentId", "version", "fromState", "toState"),
}
"""The members of each deployment event's payload, as RFC 0082 defines them: closed, with
no extension members, and content-free (ids, versions, states; never a caller's text)."""

RULES: dict[tuple[str, str], tuple[str, ...]] = {
    ("draft", "promote"): ("test", "staged", "active"),
    ("test", "promote"): ("staged", "active"),
    ("staged", "promote"): ("active",),
    ("paused", "promote"): ("active",),
    ("active", "pause"): ("paused",),
    ("active", "deprecate"): ("deprecated",),
    ("paused", "deprecate"): ("deprecated",),
    ("active", "rollback"): ("rolled-back",),
}
"""``(state, transition)`` → the states it may lead to, the default first. A pair that is
not here is not a transition of that state."""


class TransitionError(OpenwopEvalError):
    """A transition the state machine does not allow; ``details`` say which."""

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details = details or {}


@dataclass(frozen=True)
class Deployment:
    tenant: str
    agent_id: str
    version: str
    state: str
    channels: list[str] = field(default_factory=list)
    eval_run_id: str | None = None
    rollback_pointer: str | None = None
    updated_at: str = ""

    def wire(self) -> dict[str, Any]:
        """The ``AgentDeployment`` record the protocol returns."""
        body: dict[str, Any] = {
            "agentId": self.agent_id,
            "version": self.version,
            "state": self.state,
            "channels": list(self.channels),
        }
        if self.eval_run_id is not None:
            body["evalRunId"] = self.eval_run_id
        if self.rollback_pointer is not None:
            body["rollbackPointer"] = self.rollback_pointer
        return body


@dataclass(frozen=True)
class Transition:
    version: str
    transition: str
    to_state: str | None = None
    channel: str = "stable"
    eval_run_id: str | None = None


@dataclass(frozen=True)
class Plan:
    changes: list[Deployment]
    """Every record the transition writes, the transitioned one first."""
    target: Deployment
    """The record the transition returns."""
    event: dict[str, Any]
    """The deployment event it records."""


def target_state(state: str, transition: str, requested: str | None = None) -> str:
    """Where ``transition`` takes a version in ``state`` (to ``requested``, if given)."""
    allowed = RULES.get((state, transition))
    if allowed is None:
        raise TransitionError(
            f"cannot {transition} a version in state {state!r}",
            {"fromState": state, "transition": transition},
        )
    if requested is None:
        return allowed[0]
    if requested not in allowed:
        raise TransitionError(
            f"cannot {transition} a {state} version to {requested}",
            {"fromState": state, "toState": requested, "allowed": list(allowed)},
        )
    return requested


def lands_gated(state: str, gated_states: tuple[str, ...]) -> bool:
    """Whether ``state`` is a gated state or past the first one (a promotion straight to
    ``active`` does not skip a gate on ``test``)."""
    gates = [FORWARD.index(g) for g in gated_states if g in FORWARD]
    return state in FORWARD and bool(gates) and FORWARD.index(state) >= min(gates)


def channel_of(record: Deployment) -> str:
    return record.channels[0] if record.channels else "stable"


def plan(records: list[Deployment], step: Transition, tenant: str, agent_id: str) -> Plan:
    """The records a transition changes, the one it returns, and its deployment event."""
    by_version = {r.version: r for r in records}
    current = by_version.get(step.version) or Deployment(
        tenant, agent_id, step.version, "draft", [step.channel]
    )
    target = target_state(current.state, step.transition, step.to_state)
    if step.transition == "promote":
        return _promote(records, current, target, step)
    changed = replace(current, state=target)
    if step.transition != "rollback":
        return Plan([changed], changed, _state_changed(changed, current.state))
    pointer = by_version.get(current.rollback_pointer or "")
    if pointer is None:
        raise TransitionError(f"version {step.version} has no earlier version to roll back to")
    restored = replace(pointer, state="active")
    return Plan([changed, restored], changed, _rolled_back(changed, restored))


def active_on(records: list[Deployment], channel: str, version: str) -> Deployment | None:
    """The version active on ``channel`` that a promotion of ``version`` would replace."""
    return next(
        (
            r
            for r in records
            if r.state == "active" and r.version != version and channel_of(r) == channel
        ),
        None,
    )


def _promote(records: list[Deployment], current: Deployment, target: str, step: Transition) -> Plan:
    active = active_on(records, step.channel, step.version)
    promoted = replace(
        current,
        state=target,
        channels=[step.channel],
        eval_run_id=step.eval_run_id or current.eval_run_id,
    )
    changes = [promoted]
    replaced = active.version if active is not None and target == "active" else None
    if active is not None and replaced is not None:
        promoted = replace(promoted, rollback_pointer=replaced)
        changes = [promoted, replace(active, state="deprecated")]
    return Plan(changes, promoted, _promoted(promoted, replaced))


def _promoted(record: Deployment, replaced: str | None) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "agentId": record.agent_id,
        "toVersion": record.version,
        "toState": record.state,
    }
    if replaced is not None:
        payload["fromVersion"] = replaced
    if record.channels:
        payload["channel"] = record.channels[0]
    if record.eval_run_id is not None:
        payload["evalRunId"] = record.eval_run_id
    return {"type": PROMOTED, "payload": payload}


def _rolled_back(record: Deployment, restored: Deployment) -> dict[str, Any]:
    """``record`` rolled back, ``restored`` (its rollback pointer) active again."""
    payload = {
        "agentId": record.agent_id,
        "fromVersion": record.version,
        "toVersion": restored.version,
        "rollbackPointer": restored.version,
    }
    return {"type": ROLLED_BACK, "payload": payload}


def _state_changed(record: Deployment, from_state: str) -> dict[str, Any]:
    payload = {
        "agentId": record.agent_id,
        "version": record.version,
        "fromState": from_state,
        "toState": record.state,
    }
    return {"type": STATE_CHANGED, "payload": payload}


def conform_event(event: Any) -> Any:
    """A stored deployment event as RFC 0082 defines it. Versions before store revision
    0007 wrote members the definitions do not have (``fromState`` on a promotion,
    ``toVersion`` where a state change says ``version``, a rollback without its
    ``rollbackPointer``); such an event is read in the defined shape. Anything that is not a
    deployment event with a payload is returned as it is."""
    if not isinstance(event, dict) or not isinstance(event.get("payload"), dict):
        return event
    kind = event.get("type")
    members = EVENT_MEMBERS.get(kind) if isinstance(kind, str) else None
    if members is None:
        return event
    given = dict(event["payload"])
    if event["type"] == STATE_CHANGED and "toVersion" in given:
        given.setdefault("version", given["toVersion"])
    if event["type"] == ROLLED_BACK and "toVersion" in given:
        given.setdefault("rollbackPointer", given["toVersion"])
    return {**event, "payload": {k: given[k] for k in members if k in given}}
