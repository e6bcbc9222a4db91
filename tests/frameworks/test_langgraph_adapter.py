"""A LangGraph agent (``langgraph_agents.py``: ``create_react_agent`` whose tools call their
APIs directly, its model a scripted one on a fake endpoint on loopback) named by ``--agent
module:graph`` with no glue runs unchanged, except that every tool call goes to the tool
boundary under its LangChain name, renamed by ``--tool-map``: a good path passes, a skipped
step, a forbidden call and a fixture miss fail; the model is offered the tools' own schemas."""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import Result
from langchain_core.messages import AIMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from openwop_eval.agents.base import AgentSpecError, AsyncTools, ToolCallError, TrialContext
from openwop_eval.agents.frameworks import adapt
from openwop_eval.agents.frameworks.langgraph_agent import graph_input
from openwop_eval.core import JSON
from tests.fakes.openai_server import FakeEndpoint
from tests.frameworks.adapter_runs import (
    LIVE_TOOLS,
    WRONG_PATHS,
    run_framework_case,
    scripted_model,
)
from tests.mcp_servers import scripted_model as script
from tests.mcp_servers.runs import called

AGENT = "tests.frameworks.langgraph_agents"
NAMES = {  # the suite's tool → the graph's tool
    "lookup-order": "lookup_order",
    "refund": "issue_refund",
    "delete": "delete_account",
    "lookup-customer": "lookup_customer",  # no tool of the graph
}


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEndpoint]:
    """The scripted model; the agent's module is imported afresh, on its endpoint."""
    with scripted_model(monkeypatch, AGENT) as fake:
        yield fake


def team() -> ModuleType:
    """The agent's module, as ``--agent`` imports it (on the current endpoint)."""
    return importlib.import_module(AGENT)


def run(tmp: Path, case: str, *options: str, **suite: Any) -> Result:
    """``openwop-eval run`` of the refunds ``case`` with ``--agent module:graph``: the task
    asks the scripted model for the calls under the graph's tool names."""
    return run_framework_case(tmp, case, f"{AGENT}:graph", NAMES, *options, **suite)


def tool_messages(model: FakeEndpoint) -> list[dict[str, Any]]:
    """The last request's ``tool`` messages: every tool answer the model was given."""
    return [m for m in model.requests[-1].body["messages"] if m["role"] == "tool"]


def test_a_good_path_passes_with_every_call_routed_under_its_renamed_name(
    tmp_path: Path, model: FakeEndpoint
) -> None:
    result = run(tmp_path, "good")
    assert result.exit_code == 0, result.output
    assert called(tmp_path, "good") == ["crm:lookup-order", "payments:refund"] * 2
    assert len(model.requests) == 6  # 2 trials × (2 calls + the answer)
    # The fixtures answered: the APIs, which raise, were never reached.
    assert json.loads(tool_messages(model)[0]["content"]) == {"totalUsd": 59.9}


def test_the_model_is_offered_the_tools_own_names_descriptions_and_schemas(
    tmp_path: Path, model: FakeEndpoint
) -> None:
    assert run(tmp_path, "good").exit_code == 0
    own = [convert_to_openai_tool(t) for t in team().TOOLS]  # the module the run imported
    for seen in model.requests:
        assert seen.body["tools"] == own
        assert seen.body["messages"][0] == {"role": "system", "content": team().PROMPT}


@pytest.mark.parametrize(("case", "reason"), WRONG_PATHS)
def test_a_wrong_path_fails_with_the_reason(
    tmp_path: Path, model: FakeEndpoint, case: str, reason: str
) -> None:
    result = run(tmp_path, case)
    assert result.exit_code == 1, result.output
    assert reason in result.output


def test_a_fixture_miss_fails_closed_and_the_model_gets_a_tool_error(
    tmp_path: Path, model: FakeEndpoint
) -> None:
    result = run(tmp_path, "used-up")
    assert result.exit_code == 1, result.output
    assert "call 2 to crm:lookup-order had no fixture response" in result.output
    missed = json.loads(tool_messages(model)[1]["content"])["error"]
    assert missed["kind"] == "fixture-miss"
    assert "call to crm:lookup-order missed" in missed["message"]
    assert called(tmp_path, "used-up") == (["crm:lookup-order"] * 2 + ["payments:refund"]) * 2


def test_a_tool_the_graph_lacks_is_refused_by_langgraph_before_the_boundary(
    tmp_path: Path, model: FakeEndpoint
) -> None:
    result = run(tmp_path, "unanswered")
    assert result.exit_code == 0, result.output  # the refused call is no call of the trajectory
    assert called(tmp_path, "unanswered") == ["crm:lookup-order", "payments:refund"] * 2
    refused = tool_messages(model)[1]["content"]
    assert "lookup_customer is not a valid tool" in refused


def test_a_live_tools_failure_reaches_the_model_as_the_tools_error_text(
    tmp_path: Path, model: FakeEndpoint
) -> None:
    """As LangChain shows a tool's error: a tool message of status ``error``, its text."""
    result = run(tmp_path, "good", "--tools", str(LIVE_TOOLS), live=True)
    assert result.exit_code == 0, result.output  # the graph went on to its answer
    assert called(tmp_path, "good") == ["crm:lookup-order", "payments:refund"] * 2
    failed = tool_messages(model)[1]["content"]
    assert failed == "payments:refund failed: RuntimeError: the payments API declined the refund"


class Port:
    """A tool boundary whose live tool fails."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def call(
        self, tool: str, args: Mapping[str, JSON] | None, transport: str | None = None
    ) -> JSON:
        self.calls.append((tool, args))
        raise ToolCallError("HTTP 503 from the CRM")


def trial(graph: Any, task: JSON, port: Port) -> Any:
    agent = adapt(graph)
    assert agent is not None
    return asyncio.run(agent(task, AsyncTools(port, TrialContext("refund", 0, task))))


def test_the_reply_is_the_last_answer_with_the_runs_messages_as_its_transcript(
    model: FakeEndpoint,
) -> None:
    task = {"calls": [["crm", "lookup_order", {"orderId": "A-1"}]], "answer": "refunded"}
    port = Port()
    reply = trial(team().graph, task, port)
    assert port.calls == [("lookup_order", {"orderId": "A-1"})]
    assert reply.output == "Done: refunded."
    assert tool_messages(model) == [
        {"role": "tool", "tool_call_id": "call_0", "content": "HTTP 503 from the CRM"}
    ]
    assert [m["role"] for m in reply.transcript] == ["user", "assistant", "tool", "assistant"]


def hand_built(model: FakeEndpoint, node: ToolNode) -> Any:
    """A graph of the team's own: the model, then ``node`` while the model calls tools."""
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(base_url=model.url, api_key="x", model=script.MODEL)
    bound = llm.bind_tools(list(node.tools_by_name.values()))

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", node)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, ["tools", END])
    builder.add_edge("tools", "agent")
    return builder.compile()


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_the_teams_tool_wrapper_still_wraps_each_routed_call(
    model: FakeEndpoint, kind: str
) -> None:
    """A wrapper the team gave its ToolNode (a middleware's ``wrap_tool_call``) sees the call
    and what the boundary answered; the tool's own function never runs."""
    seen: list[str] = []

    def note(answer: Any) -> Any:
        seen.append(answer.content)
        return answer

    async def awrap(request: Any, execute: Any) -> Any:
        return note(await execute(request))

    def wrap(request: Any, execute: Any) -> Any:
        return note(execute(request))

    wrapper = {"awrap_tool_call": awrap} if kind == "async" else {"wrap_tool_call": wrap}
    node = ToolNode(team().TOOLS, **wrapper)
    task = {"calls": [["crm", "issue_refund", {"orderId": "A-1", "amountUsd": 5}]], "answer": "ok"}
    port = Port()
    assert trial(hand_built(model, node), task, port).output == "Done: ok."
    assert seen == ["HTTP 503 from the CRM"]
    assert port.calls == [("issue_refund", {"orderId": "A-1", "amountUsd": 5})]


def test_a_run_that_fails_raises_with_what_it_exchanged(model: FakeEndpoint) -> None:
    async def awrap(request: Any, execute: Any) -> Any:
        raise RuntimeError("the middleware failed")

    node = ToolNode(team().TOOLS, awrap_tool_call=awrap)
    task = {"calls": [["crm", "lookup_order", {"orderId": "A-1"}]], "answer": "refunded"}
    with pytest.raises(RuntimeError, match="the middleware failed") as failed:
        trial(hand_built(model, node), task, Port())
    transcript = failed.value.transcript  # type: ignore[attr-defined]
    assert [m["role"] for m in transcript] == ["user", "assistant"]
    assert transcript[1]["tool_calls"][0]["function"]["name"] == "lookup_order"


def test_the_tool_node_of_a_subgraph_added_as_a_node_is_routed(model: FakeEndpoint) -> None:
    builder = StateGraph(MessagesState)
    builder.add_node("support", team().graph)  # a supervisor's agent, say
    builder.add_edge(START, "support")
    task = {"calls": [["crm", "lookup_order", {"orderId": "A-1"}]], "answer": "refunded"}
    port = Port()
    assert trial(builder.compile(), task, port).output == "Done: refunded."
    assert port.calls == [("lookup_order", {"orderId": "A-1"})]


def test_the_teams_graph_is_not_changed(model: FakeEndpoint) -> None:
    graph = team().graph
    nodes, tool_node = dict(graph.nodes), graph.nodes["tools"].bound
    assert adapt(graph) is not None
    assert graph.nodes == nodes
    assert graph.nodes["tools"].bound is tool_node


def test_a_graph_without_a_tool_node_is_refused_with_what_was_expected() -> None:
    def answer(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("hello")]}

    builder = StateGraph(MessagesState)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    with pytest.raises(AgentSpecError, match="has no ToolNode"):
        adapt(builder.compile())
    with pytest.raises(AgentSpecError, match="not compiled"):
        adapt(builder)


@pytest.mark.parametrize(
    ("task", "graph"),
    [
        ("Refund A-1", {"messages": [{"role": "user", "content": "Refund A-1"}]}),
        ({"orderId": "A-1"}, {"messages": [{"role": "user", "content": '{"orderId": "A-1"}'}]}),
        ({"message": "Refund A-1"}, {"messages": [{"role": "user", "content": "Refund A-1"}]}),
        ([1, 2], {"messages": [{"role": "user", "content": "[1, 2]"}]}),
        (
            {"messages": [{"role": "user", "content": "hi"}], "locale": "fr"},
            {"messages": [{"role": "user", "content": "hi"}], "locale": "fr"},
        ),
    ],
)
def test_the_task_input_becomes_the_graphs_messages(task: JSON, graph: Any) -> None:
    assert graph_input(task) == graph


def test_an_answer_reaches_the_model_as_json_text_under_the_tools_name(
    model: FakeEndpoint,
) -> None:
    class Answers(Port):
        async def call(
            self, tool: str, args: Mapping[str, JSON] | None, transport: str | None = None
        ) -> JSON:
            return {"status": "délivré"}

    task = {"calls": [["crm", "lookup_order", {"orderId": "A-1"}]], "answer": "refunded"}
    reply = trial(team().graph, task, Answers())
    assert reply.transcript[2] == {
        "role": "tool",
        "name": "lookup_order",
        "tool_call_id": "call_0",
        "content": '{"status": "délivré"}',
    }
