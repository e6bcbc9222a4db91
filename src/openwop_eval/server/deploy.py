"""Agent deployment requests and the eval gate (RFC 0246 reads `passed`); the state machine
itself is data, in :mod:`openwop_eval.protocol.deployments`.

The gate is fail-closed: a promotion into a gated state (or past one) needs an eval run of
this agent in the caller's tenant that completed and whose summary says ``passed: true`` —
and, with ``required_pass_score``, whose gated aggregate also meets that bar; what makes a
run evidence at all (the host ran it, this version, a required suite that can fail) is
gate.py; with ``require_no_regression``, it must not have regressed against the eval run of
the version now active (``compare``'s rule, on gated scores). Anything else is
``422 eval_gate_unmet`` and nothing changes.
"""

from __future__ import annotations

from typing import Any

from ..compare import CompareInputError, compare, read_side, regression_reasons
from ..core import Suite
from ..core.stats import decimal
from ..protocol.deployments import (
    STATES,
    TRANSITIONS,
    Deployment,
    Plan,
    Transition,
    TransitionError,
    lands_gated,
    plan,
)
from ..store import RunRecord
from .config import DeploymentPolicy
from .errors import ApiError, validation
from .inputs import MAX_CHANNEL_CHARS, MAX_VERSION_CHARS, is_run_id, is_text

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
    if "toState" in body and body["toState"] not in STATES:
        problems.append(f"toState must be one of {', '.join(STATES)}")
    if "channel" in body and not is_text(body["channel"], MAX_CHANNEL_CHARS):
        problems.append(f"channel must be 1 to {MAX_CHANNEL_CHARS} printable characters")
    if "evalRunId" in body and not is_run_id(body["evalRunId"]):
        problems.append("evalRunId must be a run id (tenant/opaque)")
    if "reason" in body and not isinstance(body["reason"], str):
        problems.append("reason must be a string")
    if problems:
        raise validation("the deployment transition is invalid", {"problems": problems})
    return body


def transition_of(body: dict[str, Any], policy: DeploymentPolicy) -> Transition:
    """The transition a checked body asks for, with what this host serves checked too."""
    channel = body.get("channel", policy.channels[0])
    if channel not in policy.channels:
        raise validation(
            f"channel {channel!r} is not served; channels: {', '.join(policy.channels)}"
        )
    if body["transition"] == "adjust-canary":
        raise validation("this host does not run canaries (agents.deployment.canary is false)")
    return Transition(
        body["version"], body["transition"], body.get("toState"), channel, body.get("evalRunId")
    )


def plan_transition(
    records: list[Deployment], step: Transition, tenant: str, agent_id: str
) -> Plan:
    """:func:`openwop_eval.protocol.deployments.plan`, its refusals as ``400 validation_error``."""
    try:
        return plan(records, step, tenant, agent_id)
    except TransitionError as exc:
        raise validation(str(exc), exc.details or None) from None


def gated(step: Transition, planned: Plan, policy: DeploymentPolicy) -> bool:
    """Whether this transition must clear the eval gate before it is recorded: a promotion
    that lands in a gated state or past the first one. (A rollback restores the version
    that was active before, which cleared the gate when it was promoted.)"""
    return (
        policy.required_eval
        and step.transition == "promote"
        and lands_gated(planned.target.state, policy.gated_states)
    )


def unfailable(suite: Suite) -> str | None:
    """Why no run of ``suite`` can fail (so none is evidence), or None."""
    if suite.pass_score <= 0:
        return "its passScore is 0, so every task passes whatever its trials did"
    if not suite.tasks:
        return "it has no task"
    return None


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
    if run.status != "completed" or not isinstance(run.summary, dict):
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


def regression_refusal(
    run: RunRecord, baseline: RunRecord | None, active: Deployment, policy: DeploymentPolicy
) -> tuple[str, dict[str, Any]] | None:
    """Why the eval run fails ``require_no_regression`` against ``baseline``, the eval run
    of the ``active`` version — fail-closed when the two cannot be compared — or None."""
    details: dict[str, Any] = {"activeVersion": active.version}
    if baseline is None or baseline.status != "completed" or baseline.summary is None:
        return "the active version has no completed eval run to compare with", details
    details["baselineEvalRunId"] = baseline.run_id
    try:
        comparison = compare(
            read_side(baseline.summary, baseline.run_id), read_side(run.summary, run.run_id)
        )
    except CompareInputError:
        return "the eval run cannot be compared with the active version's", details
    regressions = regression_reasons(comparison, policy.regression_tolerance)
    if not regressions:
        return None
    details["regressions"] = regressions
    return "the eval run regressed against the active version's eval run", details


def gate_error(run_id: str | None, reason: str, extra: dict[str, Any] | None = None) -> ApiError:
    details: dict[str, Any] = {"reason": reason, **(extra or {})}
    if run_id is not None:
        details["evalRunId"] = run_id
    return ApiError(422, "eval_gate_unmet", f"promotion refused: {reason}", details)
