"""The published `openwop-client` 2.7.0, unmodified, drives the whole flow against a real host
process: discover → create an eval run → stream its events → read its summary → promote."""

from __future__ import annotations

import pytest
from openwop_client import AgentDeploymentTransition, CreateRunRequest, OpenwopClient, WopError

from tests.hosts import Host

AGENT = "acme.support-resolver"
EXAMPLE_SUITE = "acme.support.evals.refunds@1.0.0"
GATE_SUITE = "core.conformance.evals.trajectory-gate@1.0.0"


def client(host: Host, key: str = "acme-key") -> OpenwopClient:
    return OpenwopClient(base_url=host.url, api_key=key, timeout=30)


def run_to_end(c: OpenwopClient, suite: str, agent: str, key: str | None = None) -> str:
    created = c.runs_create(
        CreateRunRequest(mode="eval", evalSuiteRef=suite, agentId=agent), idempotency_key=key
    )
    types = [event.type for event in c.runs_events(created.runId)]
    assert types[0] == "run.started"
    assert types[-1] == "run.completed"
    assert "eval.completed" in types
    return created.runId


def promote(c: OpenwopClient, agent: str, version: str, run_id: str) -> object:
    return c.agents_transition_deployment(
        agent,
        AgentDeploymentTransition(
            version=version,
            transition="promote",
            toState="active",
            channel="stable",
            evalRunId=run_id,
        ),
        idempotency_key=f"promote-{version}-{run_id}",
    )


def test_a_passing_eval_promotes_the_agent(host: Host) -> None:
    c = client(host)
    agents = c.discovery_capabilities().family("agents")
    assert agents is not None
    assert {"evalSuite", "deployment"} <= set(agents.facets)

    run_id = run_to_end(c, EXAMPLE_SUITE, AGENT, key="eval-support-1")
    again = c.runs_create(
        CreateRunRequest(mode="eval", evalSuiteRef=EXAMPLE_SUITE, agentId=AGENT),
        idempotency_key="eval-support-1",
    )
    assert again.runId == run_id  # the idempotent replay names the same run

    summary = c.runs_eval_summary(run_id)
    assert summary is not None
    assert summary.passed is True
    assert summary.taskCount == 3

    deployment = promote(c, AGENT, "1.1.0", run_id)
    assert deployment.state == "active"  # type: ignore[attr-defined]
    assert deployment.evalRunId == run_id  # type: ignore[attr-defined]
    listed = c.agents_list_deployments(AGENT)
    assert listed is not None
    assert [(d.version, d.state) for d in listed] == [("1.1.0", "active")]


def test_the_rfc_0246_suite_gated_fixture_cannot_promote(host: Host) -> None:
    c = client(host)
    agent = "core.conformance.mock-agent"
    run_id = run_to_end(c, GATE_SUITE, agent)
    summary = c.runs_eval_summary(run_id)
    assert summary is not None
    assert summary.aggregateScore == 1  # every answer was right ...
    assert summary.passed is False  # ... but one path was wrong
    with pytest.raises(WopError) as refused:
        promote(c, agent, "2.0.0", run_id)
    assert refused.value.envelope is not None
    assert refused.value.envelope.error == "eval_gate_unmet"
    assert refused.value.status == 422
    assert c.agents_list_deployments(agent) == []  # no state change, nothing promoted


def test_an_agent_that_takes_a_wrong_path_cannot_promote(host: Host) -> None:
    c = client(host)
    run_id = run_to_end(c, EXAMPLE_SUITE, "acme.flawed-resolver")
    summary = c.runs_eval_summary(run_id)
    assert summary is not None
    assert summary.passed is False
    with pytest.raises(WopError) as refused:
        promote(c, "acme.flawed-resolver", "1.0.1", run_id)
    assert refused.value.envelope is not None
    assert refused.value.envelope.error == "eval_gate_unmet"


def test_a_passing_eval_of_another_agent_does_not_open_the_gate(host: Host) -> None:
    c = client(host)
    run_id = run_to_end(c, EXAMPLE_SUITE, AGENT)
    with pytest.raises(WopError) as refused:
        promote(c, "acme.flawed-resolver", "1.0.2", run_id)
    assert refused.value.envelope is not None
    assert "evaluated agent acme.support-resolver" in refused.value.envelope.message
