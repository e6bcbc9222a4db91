"""Agent deployments: the RFC 0082 state machine and the eval gate (RFC 0246 reads `passed`).

States: draft → test → staged → active (forward, one or several steps at a time, each a
``promote``), active ↔ paused, active/paused → deprecated, active → rolled-back (the
version it replaced becomes active again). One version is active per agent; promoting
another to active deprecates the previous one and records it as the rollback pointer.

The gate is fail-closed: a promotion into a gated state needs an eval run of this agent in
the caller's tenant that completed and whose summary says ``passed: true`` — and, with
``required_pass_score``, whose gated aggregate also meets that bar. Anything else is
``422 eval_gate_unmet`` and nothing changes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..core.stats import decimal
from ..store import RunRecord
from ..store.host import Deployment
from .config import DEPLOYMENT_STATES, DeploymentPolicy
from .errors import ApiError, validation
from .inputs import MAX_CHANNEL_CHARS, MAX_VERSION_CHARS, is_run_id, is_text

FORWARD = ("draft", "test", "staged", "active")
TRANSITIONS = ("promote", "pause", "deprecate", "rollback", "adjust-canary")
TRANSITION_KEYS = {
    "version",
    "transition",
    "toState",
    "channel",
    "canaryPercent",
    "evalRunId",
    "reason",
}


def parse_transition(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise validation("the body must be a JSON object")
    problems = [f"unknown key {k!r}" for k in body if k not in TRANSITION_KEYS]
    version, transition = body.get("version"), body.get("transition")
    # Every string that reaches a bounded column is checked here, before the gate reads
    # the store or a record is written.
    if not is_text(version, MAX_VERSION_CHARS) or not version.strip():
        problems.append(f"version must be 1 to {MAX_VERSION_CHARS} printable characters")
    if transition not in TRANSITIONS:
        problems.append(f"transition must be one of {', '.join(TRANSITIONS)}")
    if "toState" in body and body["toState"] not in DEPLOYMENT_STATES:
        problems.append(f"toState must be one of {', '.join(DEPLOYMENT_STATES)}")
    if "channel" in body and not is_text(body["channel"], MAX_CHANNEL_CHARS):
        problems.append(f"channel must be 1 to {MAX_CHANNEL_CHARS} printable characters")
    if "evalRunId" in body and not is_run_id(body["evalRunId"]):
        problems.append("evalRunId must be a run id (tenant/opaque)")
    if "reason" in body and not isinstance(body["reason"], str):
        problems.append("reason must be a string")
    if problems:
        raise validation("the deployment transition is invalid", {"problems": problems})
    return body


def plan(
    records: list[Deployment],
    body: dict[str, Any],
    tenant: str,
    agent_id: str,
    policy: DeploymentPolicy,
) -> tuple[list[Deployment], Deployment, dict[str, Any]]:
    """The records a transition changes, the one it returns, and its deployment event."""
    version, transition = body["version"], body["transition"]
    channel = body.get("channel", policy.channels[0])
    if channel not in policy.channels:
        raise validation(
            f"channel {channel!r} is not served; channels: {', '.join(policy.channels)}"
        )
    if transition == "adjust-canary":
        raise validation("this host does not run canaries (agents.deployment.canary is false)")
    by_version = {r.version: r for r in records}
    current = by_version.get(version) or Deployment(tenant, agent_id, version, "draft", [channel])
    active = next((r for r in records if r.state == "active" and r.version != version), None)

    if transition == "promote":
        target_state = body.get("toState") or _next(current.state)
        _check_promote(current.state, target_state)
        changed_target = replace(
            current,
            state=target_state,
            channels=[channel],
            eval_run_id=body.get("evalRunId", current.eval_run_id),
        )
        changes = [changed_target]
        if target_state == "active" and active is not None:
            changed_target = replace(changed_target, rollback_pointer=active.version)
            changes = [changed_target, replace(active, state="deprecated")]
        event = _event(
            "deployment.promoted",
            agent_id,
            changed_target,
            current.state,
            active.version if active and target_state == "active" else None,
        )
        return changes, changed_target, event
    if transition == "pause":
        _require(current.state, ("active",), "pause")
        changed = replace(current, state="paused")
    elif transition == "deprecate":
        _require(current.state, ("active", "paused"), "deprecate")
        changed = replace(current, state="deprecated")
    else:  # rollback
        _require(current.state, ("active",), "roll back")
        pointer = by_version.get(current.rollback_pointer or "")
        if pointer is None:
            raise validation(f"version {version} has no earlier version to roll back to")
        changed = replace(current, state="rolled-back")
        restored = replace(pointer, state="active")
        event = _event("deployment.rolled-back", agent_id, restored, pointer.state, version)
        return [changed, restored], changed, event
    return (
        [changed],
        changed,
        _event("deployment.state-changed", agent_id, changed, current.state, None),
    )


def _next(state: str) -> str:
    if state == "paused":
        return "active"
    if state not in FORWARD or state == "active":
        raise validation(f"a version in state {state!r} cannot be promoted further")
    return FORWARD[FORWARD.index(state) + 1]


def _check_promote(state: str, target: str) -> None:
    if target not in FORWARD[1:]:
        raise validation(f"promote goes to test, staged or active, not {target!r}")
    if state == "paused" and target == "active":
        return
    if state not in FORWARD or FORWARD.index(target) <= FORWARD.index(state):
        raise validation(
            f"cannot promote a {state} version to {target}", {"fromState": state, "toState": target}
        )


def _require(state: str, allowed: tuple[str, ...], verb: str) -> None:
    if state not in allowed:
        raise validation(f"cannot {verb} a version in state {state!r}", {"fromState": state})


def _event(
    kind: str, agent_id: str, record: Deployment, from_state: str, from_version: str | None
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "agentId": agent_id,
        "toVersion": record.version,
        "toState": record.state,
        "fromState": from_state,
    }
    if from_version is not None:
        payload["fromVersion"] = from_version
    if record.channels:
        payload["channel"] = record.channels[0]
    if record.eval_run_id is not None:
        payload["evalRunId"] = record.eval_run_id
    return {"type": kind, "payload": payload}


def gated(body: dict[str, Any], policy: DeploymentPolicy, current_state: str) -> bool:
    """Whether this transition must clear the eval gate before it is recorded."""
    if not policy.required_eval or body["transition"] != "promote":
        return False
    target = body.get("toState") or ("active" if current_state == "paused" else None)
    if target is None and current_state in FORWARD[:-1]:
        target = FORWARD[FORWARD.index(current_state) + 1]
    return target in policy.gated_states


def gate_refusal(
    run: RunRecord | None, tenant: str, agent_id: str, policy: DeploymentPolicy
) -> str | None:
    """Why the eval run does not open the gate, or None when it does."""
    if run is None or run.tenant != tenant:
        return "the eval run was not found"
    if run.mode != "eval":
        return "the run is not an eval run"
    if not run.terminal:
        return f"the eval run is still {run.status}"
    if run.status != "completed" or run.summary is None:
        return f"the eval run ended {run.status}"
    if run.agent_id != agent_id:
        return f"the eval run evaluated agent {run.agent_id}, not {agent_id}"
    if run.summary.get("passed") is not True:
        return "the eval run did not pass"
    bar = policy.required_pass_score
    if bar is not None:
        score = run.summary.get("gatedAggregateScore", run.summary.get("aggregateScore"))
        if not isinstance(score, int | float) or decimal(score) < decimal(bar):
            return f"the eval run's gated aggregate score {score} is below {bar}"
    return None


def gate_error(run_id: str | None, reason: str) -> ApiError:
    details: dict[str, Any] = {"reason": reason}
    if run_id is not None:
        details["evalRunId"] = run_id
    return ApiError(422, "eval_gate_unmet", f"promotion refused: {reason}", details)
