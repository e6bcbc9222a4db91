"""The deployment state machine and the eval gate, as pure rules."""

from __future__ import annotations

from typing import Any

import pytest

from openwop_eval.protocol.deployments import (
    RULES,
    STATES,
    Deployment,
    Plan,
    Transition,
    lands_gated,
    target_state,
)
from openwop_eval.server.config import DeploymentPolicy
from openwop_eval.server.deploy import gate_refusal, gated, plan_transition, transition_of
from openwop_eval.server.errors import ApiError
from openwop_eval.store import RunRecord

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


def plan(records: list[Deployment], body: dict[str, Any]) -> Plan:
    return plan_transition(records, transition_of(body, POLICY), "acme", "ag")


def promote(records: list[Deployment], version: str, to: str | None = None) -> list[Deployment]:
    body: dict[str, Any] = {"version": version, "transition": "promote", "evalRunId": "acme/r"}
    if to:
        body["toState"] = to
    return plan(records, body).changes


def test_promotion_moves_forward_and_replaces_the_active_version() -> None:
    assert [d.state for d in promote([], "1.0.0")] == ["test"]
    first = promote([], "1.0.0", "active")
    assert [(d.version, d.state) for d in first] == [("1.0.0", "active")]
    second = promote(first, "2.0.0", "active")
    assert [(d.version, d.state, d.rollback_pointer) for d in second] == [
        ("2.0.0", "active", "1.0.0"),
        ("1.0.0", "deprecated", None),
    ]
    back = plan([second[0], second[1]], {"version": "2.0.0", "transition": "rollback"})
    assert [(d.version, d.state) for d in back.changes] == [
        ("2.0.0", "rolled-back"),
        ("1.0.0", "active"),
    ]
    assert back.target.state == "rolled-back"
    assert back.event["type"] == "deployment.rolled-back"


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
        plan(records, {"version": "1.0.0", **body})
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
    step = transition_of({"version": "1", **body}, POLICY)
    planned = plan_transition([Deployment("acme", "ag", "1", current)], step, "acme", "ag")
    assert gated(step, planned, POLICY) is expected
    assert gated(step, planned, DeploymentPolicy(required_eval=False)) is False


def test_the_rules_table_is_the_state_machine() -> None:
    for (state, transition), targets in RULES.items():
        assert {state, *targets} <= set(STATES)
        assert target_state(state, transition) == targets[0]
        for target in targets:
            assert target_state(state, transition, target) == target
    forward = ("draft", "test", "staged", "active")
    for i, state in enumerate(forward[:-1]):
        assert RULES[(state, "promote")] == forward[i + 1 :]  # forward, one or several steps
    assert all(t != "promote" for s, t in RULES if s not in (*forward[:-1], "paused"))


def test_a_transition_is_planned_without_the_host() -> None:
    from openwop_eval.protocol.deployments import plan as plan_pure

    done = plan_pure([], Transition("1.0.0", "promote", "active", "stable", "acme/r"), "a", "ag")
    assert (done.target.state, done.event["type"]) == ("active", "deployment.promoted")


@pytest.mark.parametrize(
    ("state", "gated_states", "gate"),
    [
        ("active", ("test", "staged"), True),  # past the first gated state: still gated
        ("staged", ("test",), True),
        ("test", ("staged", "active"), False),
        ("draft", ("test",), False),
        ("paused", ("active",), False),
        ("active", (), False),
    ],
)
def test_a_gate_holds_for_every_state_past_it(
    state: str, gated_states: tuple[str, ...], gate: bool
) -> None:
    assert lands_gated(state, gated_states) is gate


def test_a_promotion_replaces_the_active_version_of_its_channel_only() -> None:
    stable = Deployment("acme", "ag", "1.0.0", "active", ["stable"])
    beta = Deployment("acme", "ag", "1.1.0", "active", ["beta"])
    planned = plan_transition(
        [stable, beta], Transition("2.0.0", "promote", "active", "beta"), "acme", "ag"
    )
    assert [(d.version, d.state) for d in planned.changes] == [
        ("2.0.0", "active"),
        ("1.1.0", "deprecated"),
    ]
    assert planned.target.rollback_pointer == "1.1.0"
