"""A Pydantic AI agent (``pydantic_support_agent.py``: tools on the agent and a prefixed
toolset, each calling its API directly, its model a scripted one on a fake endpoint on
loopback) named by ``--agent module:support`` with no glue runs unchanged, except that every
tool call goes to the tool boundary under the name the model called, renamed by
``--tool-map``: a good path passes, a skipped step, a forbidden call and a fixture miss
fail; the model is offered the agent's own tools; the agent object is left as it was."""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from openwop_eval.agents.frameworks import adapt
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

AGENT = "tests.frameworks.pydantic_support_agent"
NAMES = {  # the suite's tool → the agent's tool, as the model calls it
    "lookup-order": "lookup_order",
    "refund": "refund",
    "delete": "accounts_delete",  # `delete` of the toolset prefixed "accounts"
    "lookup-customer": "lookup_customer",
}
ORDER_SEEN = ("lookup_order", {"totalUsd": 59.9})
REFUND_SEEN = ("refund", {"status": "refunded"})


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEndpoint]:
    with scripted_model(monkeypatch, AGENT) as fake:
        yield fake


def run(tmp: Path, case: str, *options: str, **suite: Any) -> Any:
    return run_framework_case(tmp, case, f"{AGENT}:support", NAMES, *options, **suite)


def agent_module() -> ModuleType:
    return importlib.import_module(AGENT)


def test_a_good_path_passes_and_every_tool_call_went_to_the_boundary(
    tmp_path: Path, model: FakeEndpoint
) -> None:
    result = run(tmp_path, "good")
    assert result.exit_code == 0, result.output
    assert called(tmp_path, "good") == ["crm:lookup-order", "payments:refund"] * 2
    # The fixtures answered, never the tools' own functions (which raise), and the agent's
    # own hook ran around each call as it would.
    assert tool_results(model) == ['{"totalUsd":59.9}', '{"status":"refunded"}']
    audited = sorted(map(str, agent_module().AUDITED))
    assert audited == sorted(map(str, [ORDER_SEEN, REFUND_SEEN] * 2))
    # The arguments as the framework validated them: the tool's default filled in.
    events = (tmp_path / "good.jsonl").read_text().splitlines()
    inputs = [json.loads(e)["payload"] for e in events if '"agent.tool-called"' in e]
    assert inputs[1]["inputs"] == {"orderId": "A-1001", "amountUsd": 59.9, "reason": "damaged"}
    # The framework's own message history of the run is the trial's transcript.
    transcript = report_trials(tmp_path, "good")[0]["transcript"]
    parts = [part for message in transcript for part in message["parts"]]
    assert [p["tool_name"] for p in parts if p["part_kind"] == "tool-call"] == [
        "lookup_order",
        "refund",
    ]


def test_the_model_is_offered_the_agents_own_tools(tmp_path: Path, model: FakeEndpoint) -> None:
    """What the agent offers unadapted is what the model was offered through the adapter;
    the run's capability left the agent object as it was."""
    assert run(tmp_path, "good").exit_code == 0
    adapted = offered(model)
    model.requests.clear()
    model.script(answer("Hello."))
    asyncio.run(agent_module().support.run("Hello."))
    assert offered(model) == adapted
    names = [tool["function"]["name"] for tool in adapted[0]]
    assert names == ["lookup_order", "refund", "lookup_customer", "accounts_delete"]


@pytest.mark.parametrize(("case", "reason"), WRONG_PATHS)
def test_a_wrong_path_fails_with_the_reason(
    tmp_path: Path, model: FakeEndpoint, case: str, reason: str
) -> None:
    result = run(tmp_path, case)
    assert result.exit_code == 1, result.output
    assert reason in result.output


def test_a_fixture_miss_fails_closed_and_the_model_sees_a_failed_tool_call(
    tmp_path: Path, model: FakeEndpoint
) -> None:
    result = run(tmp_path, "used-up")
    assert result.exit_code == 1, result.output
    assert "call 2 to crm:lookup-order had no fixture response" in result.output
    failed = [json.loads(text) for text in tool_results(model) if "error" in text]
    assert failed[0]["error"].startswith("call to crm:lookup-order missed")
    assert called(tmp_path, "used-up")[:3] == ["crm:lookup-order"] * 2 + ["payments:refund"]


def test_a_live_tools_failure_reaches_the_model_as_a_failed_tool_call(
    tmp_path: Path, model: FakeEndpoint
) -> None:
    run(tmp_path, "good", "--tools", str(LIVE_TOOLS), live=True)
    failed = [json.loads(text) for text in tool_results(model) if "error" in text]
    assert failed == [
        {"error": "payments:refund failed: RuntimeError: the payments API declined the refund"}
    ]


def test_a_structured_output_is_its_json_and_output_tools_stay_the_frameworks(
    model: FakeEndpoint,
) -> None:
    model.script(
        asking("lookup_order", {"orderId": "A-1001"}),
        asking("final_result", {"orderId": "A-1001", "refund": True}),
    )
    port = RecordingPort({"lookup_order": {"totalUsd": 59.9}})
    run_agent = adapt(agent_module().decider)
    assert run_agent is not None
    reply = asyncio.run(run_agent("Refund A-1001?", port.tools()))
    assert reply.output == {"orderId": "A-1001", "refund": True}
    assert port.calls == [("lookup_order", {"orderId": "A-1001"})]  # not the output tool
    assert reply.transcript[0]["parts"][0]["content"] == "Refund A-1001?"


def test_an_object_of_pydantic_ai_that_is_no_agent_is_not_adapted(model: FakeEndpoint) -> None:
    assert adapt(agent_module().accounts) is None
