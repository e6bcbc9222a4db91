"""An OpenAI Agents SDK agent (``sdk_support_agents.py``: a triage agent handing off to a
refunds agent whose function tools call their APIs directly, its model a scripted one on a
fake endpoint on loopback) named by ``--agent module:triage`` with no glue runs unchanged,
except that every tool call goes to the tool boundary under the tool's SDK name, renamed by
``--tool-map``: a good path passes, a skipped step, a forbidden call and a fixture miss
fail; the model is offered the agents' own tools; what cannot be routed is refused."""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from agents import Agent, Runner, function_tool

from openwop_eval.agents.base import AgentSpecError
from openwop_eval.agents.frameworks import adapt
from openwop_eval.agents.frameworks.shared import FrameworkRunError
from tests.fakes.openai_server import FakeEndpoint
from tests.frameworks.adapter_runs import (
    LIVE_TOOLS,
    WRONG_PATHS,
    RecordingPort,
    answer,
    asking,
    offered,
    report_trials,
    run_framework_case,
    scripted_model,
    tool_results,
)
from tests.mcp_servers.runs import called

AGENT = "tests.frameworks.sdk_support_agents"
NAMES = {  # the suite's tool → the SDK agent's function tool
    "lookup-order": "lookup_order",
    "refund": "refund",
    "delete": "delete_account",
    "lookup-customer": "lookup_customer",
}
HANDOFF = ["", "transfer_to_refunds", {}]
"""The triage agent's first move: it hands the conversation to the refunds agent."""


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEndpoint]:
    with scripted_model(monkeypatch, AGENT) as fake:
        yield fake


def run(tmp: Path, case: str, *options: str, **suite: Any) -> Any:
    agent = f"{AGENT}:triage"
    return run_framework_case(tmp, case, agent, NAMES, *options, first=(HANDOFF,), **suite)


def agents_module() -> ModuleType:
    return importlib.import_module(AGENT)


def test_a_good_path_passes_and_every_tool_call_went_to_the_boundary(
    tmp_path: Path, model: FakeEndpoint
) -> None:
    result = run(tmp_path, "good")
    assert result.exit_code == 0, result.output
    assert called(tmp_path, "good") == ["crm:lookup-order", "payments:refund"] * 2
    # The fixtures answered, never the tools' own functions (which raise).
    handed = json.dumps({"assistant": "refunds"})
    assert tool_results(model) == [handed, '{"totalUsd": 59.9}', '{"status": "refunded"}']
    # The SDK's own input list of the run is the trial's transcript in the report.
    transcript = report_trials(tmp_path, "good")[0]["transcript"]
    asked = [item["name"] for item in transcript if item.get("type") == "function_call"]
    assert asked == ["transfer_to_refunds", "lookup_order", "refund"]


def test_the_model_is_offered_each_agents_own_tools(tmp_path: Path, model: FakeEndpoint) -> None:
    """What the SDK offers for the triage and the refunds agent, unadapted, is what the model
    was offered through the adapter: names, descriptions and schemas unchanged."""
    assert run(tmp_path, "good").exit_code == 0
    adapted = offered(model)
    module = agents_module()
    model.requests.clear()
    model.script(answer("Hello."), answer("Hello."))
    for agent in (module.triage, module.refunds):
        asyncio.run(Runner.run(agent, "Hello."))
    assert offered(model) == adapted
    names = [[tool["function"]["name"] for tool in tools] for tools in adapted]
    assert names == [
        ["transfer_to_refunds"],
        ["lookup_order", "refund", "delete_account", "lookup_customer", "transfer_to_triage"],
    ]


@pytest.mark.parametrize(("case", "reason"), WRONG_PATHS)
def test_a_wrong_path_fails_with_the_reason(
    tmp_path: Path, model: FakeEndpoint, case: str, reason: str
) -> None:
    result = run(tmp_path, case)
    assert result.exit_code == 1, result.output
    assert reason in result.output


def test_a_fixture_miss_fails_closed_and_the_model_sees_a_tool_error(
    tmp_path: Path, model: FakeEndpoint
) -> None:
    result = run(tmp_path, "used-up")
    assert result.exit_code == 1, result.output
    assert "call 2 to crm:lookup-order had no fixture response" in result.output
    missed = [json.loads(text) for text in tool_results(model) if "fixture-miss" in text]
    assert missed[0]["error"]["message"].startswith("call to crm:lookup-order missed")
    assert called(tmp_path, "used-up")[:3] == ["crm:lookup-order"] * 2 + ["payments:refund"]


def test_a_live_tools_failure_reaches_the_model_through_the_tools_failure_function(
    tmp_path: Path, model: FakeEndpoint
) -> None:
    """``refund`` has a ``failure_error_function`` of its own: the model sees the live
    tool's error as that function words it, as it would see its own tool's failure."""
    run(tmp_path, "good", "--tools", str(LIVE_TOOLS), live=True)
    failed = [text for text in tool_results(model) if "did not go through" in text]
    assert failed == [
        "The refund did not go through: payments:refund failed:"
        " RuntimeError: the payments API declined the refund"
    ]


@pytest.mark.parametrize(
    ("name", "refusal"),
    [
        ("researcher", "tool 'web_search' (WebSearchTool) is not a function tool"),
        ("crm_over_mcp", "its MCP servers ('crm') are called by the agent itself"),
    ],
)
def test_what_cannot_be_routed_is_refused_before_the_run(
    tmp_path: Path, model: FakeEndpoint, name: str, refusal: str
) -> None:
    result = run_framework_case(tmp_path, "good", f"{AGENT}:{name}", NAMES)
    assert result.exit_code == 2, result.output
    assert refusal in result.output
    assert model.requests == []


def test_a_structured_output_is_its_json_and_the_transcript_is_json(model: FakeEndpoint) -> None:
    model.script(
        asking("lookup_order", {"orderId": "A-1001"}),
        answer({"orderId": "A-1001", "refund": True}),
    )
    port = RecordingPort({"lookup_order": {"totalUsd": 59.9}})
    run_agent = adapt(agents_module().decider)
    assert run_agent is not None
    reply = asyncio.run(run_agent({"message": "Refund A-1001?"}, port.tools()))
    assert reply.output == {"orderId": "A-1001", "refund": True}
    assert port.calls == [("lookup_order", {"orderId": "A-1001"})]
    assert reply.transcript[0] == {"role": "user", "content": "Refund A-1001?"}
    json.dumps(reply.transcript, allow_nan=False)


def test_an_object_of_the_sdk_that_is_no_agent_is_not_adapted(model: FakeEndpoint) -> None:
    """A function tool is the SDK's, but no agent: it is left to be refused as no callable."""
    assert adapt(agents_module().lookup_order) is None


def test_a_handoff_target_out_of_reach_until_the_run_is_checked_when_reached(
    model: FakeEndpoint,
) -> None:
    """A ``Handoff`` object names its agent only when invoked: an agent behind one that
    cannot be routed is refused when the run reaches it, before any of its tools runs."""
    module = agents_module()
    gate = Agent(name="gate", handoffs=[module.handoff(module.researcher)], model=module.MODEL)
    model.script(asking("transfer_to_researcher", {}))
    run_agent = adapt(gate)
    assert run_agent is not None
    with pytest.raises(AgentSpecError, match=r"tool 'web_search' .* is not a function tool"):
        asyncio.run(run_agent("Find me a flight.", RecordingPort({}).tools()))


def test_a_run_stopped_for_a_tools_approval_errors_with_its_transcript(
    model: FakeEndpoint,
) -> None:
    """Nobody approves during an evaluation: the run's interruption is the trial's error,
    and the call waiting for approval never reached the boundary."""
    module = agents_module()
    gated = function_tool(module.refund.__wrapped__, needs_approval=True)
    agent = Agent(name="gated", tools=[gated], model=module.MODEL)
    model.script(asking("refund", {"orderId": "A-1001", "amountUsd": 59.9}))
    port = RecordingPort({"refund": {"status": "refunded"}})
    run_agent = adapt(agent)
    assert run_agent is not None
    with pytest.raises(FrameworkRunError, match="stopped for the approval of refund") as raised:
        asyncio.run(run_agent("Refund A-1001.", port.tools()))
    assert port.calls == []
    assert raised.value.transcript[-1]["name"] == "refund"
