"""The deployment state machine and the eval gate, as pure rules."""

from __future__ import annotations

from typing import Any

import pytest

from openwop_eval.server.config import DeploymentPolicy
from openwop_eval.server.deploy import gate_refusal, gated, plan
from openwop_eval.server.errors import ApiError
from openwop_eval.store import RunRecord
from openwop_eval.store.host import Deployment

POLICY = DeploymentPolicy()


def eval_run(**changes: Any) -> RunRecord:
    base: dict[str, Any] = {
        "run_id": "acme/" + "r" * 20,
        "tenant": "acme",
        "status": "completed",
        "suite_id": "a.b.evals.c",
        "suite_version": "1.0.0",
        "agent_spec": "host-agent:ag",
        "agent_id": "ag",
        "summary": {"passed": True, "aggregateScore": 1.0, "gatedAggregateScore": 0.95},
    }
    return RunRecord(**{**base, **changes})


@pytest.mark.parametrize(
    ("run", "reason"),
    [
        (None, "was not found"),
        (eval_run(tenant="globex"), "was not found"),
        (eval_run(mode="workflow"), "not an eval run"),
        (eval_run(status="running"), "still running"),
        (eval_run(status="failed"), "ended failed"),
        (eval_run(status="cancelled"), "ended cancelled"),
        (eval_run(agent_id="other"), "evaluated agent other"),
        (eval_run(summary={"passed": False, "aggregateScore": 1.0}), "did not pass"),
        (eval_run(summary={"aggregateScore": 1.0}), "did not pass"),
    ],
)
def test_the_gate_refuses(run: RunRecord | None, reason: str) -> None:
    refusal = gate_refusal(run, "acme", "ag", POLICY)
    assert refusal is not None
    assert reason in refusal


def test_the_gate_opens_on_a_completed_passed_run() -> None:
    assert gate_refusal(eval_run(), "acme", "ag", POLICY) is None


def test_required_pass_score_only_tightens_the_gate() -> None:
    strict = DeploymentPolicy(required_pass_score=0.96)
    assert "below 0.96" in (gate_refusal(eval_run(), "acme", "ag", strict) or "")
    lenient = DeploymentPolicy(required_pass_score=0.0)
    failed = eval_run(summary={"passed": False, "aggregateScore": 1.0, "gatedAggregateScore": 1})
    assert gate_refusal(failed, "acme", "ag", lenient) == "the eval run did not pass"


def promote(records: list[Deployment], version: str, to: str | None = None) -> list[Deployment]:
    body: dict[str, Any] = {"version": version, "transition": "promote", "evalRunId": "acme/r"}
    if to:
        body["toState"] = to
    changes, _, _ = plan(records, body, "acme", "ag", POLICY)
    return changes


def test_promotion_moves_forward_and_replaces_the_active_version() -> None:
    assert [d.state for d in promote([], "1.0.0")] == ["test"]
    first = promote([], "1.0.0", "active")
    assert [(d.version, d.state) for d in first] == [("1.0.0", "active")]
    second = promote(first, "2.0.0", "active")
    assert [(d.version, d.state, d.rollback_pointer) for d in second] == [
        ("2.0.0", "active", "1.0.0"),
        ("1.0.0", "deprecated", None),
    ]
    back, returned, event = plan(
        [second[0], second[1]], {"version": "2.0.0", "transition": "rollback"}, "acme", "ag", POLICY
    )
    assert [(d.version, d.state) for d in back] == [("2.0.0", "rolled-back"), ("1.0.0", "active")]
    assert returned.state == "rolled-back"
    assert event["type"] == "deployment.rolled-back"


@pytest.mark.parametrize(
    ("state", "body"),
    [
        ("active", {"transition": "promote", "toState": "staged"}),
        ("staged", {"transition": "promote", "toState": "paused"}),
        ("draft", {"transition": "pause"}),
        ("test", {"transition": "rollback"}),
        ("active", {"transition": "rollback"}),  # nothing to roll back to
        ("active", {"transition": "adjust-canary", "canaryPercent": 10}),
        ("active", {"transition": "pause", "channel": "beta"}),
    ],
)
def test_illegal_transitions_are_refused(state: str, body: dict[str, Any]) -> None:
    records = [Deployment("acme", "ag", "1.0.0", state, ["stable"])]
    with pytest.raises(ApiError) as refused:
        plan(records, {"version": "1.0.0", **body}, "acme", "ag", POLICY)
    assert refused.value.code == "validation_error"


@pytest.mark.parametrize(
    ("current", "body", "expected"),
    [
        ("draft", {"transition": "promote", "toState": "active"}, True),
        ("staged", {"transition": "promote"}, True),  # the next state is active
        ("draft", {"transition": "promote"}, False),  # to test: not gated by default
        ("paused", {"transition": "promote"}, True),  # back to active
        ("active", {"transition": "pause"}, False),
    ],
)
def test_which_transitions_the_gate_checks(
    current: str, body: dict[str, Any], expected: bool
) -> None:
    assert gated({"version": "1", **body}, POLICY, current) is expected
    assert gated({"version": "1", **body}, DeploymentPolicy(required_eval=False), current) is False
