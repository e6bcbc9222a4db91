"""Hostile replies, the shapes of the task input, and how an ``openai:`` agent is resolved."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from openwop_eval.agents import (
    AgentReply,
    AgentSpecError,
    OpenAIAgent,
    OpenAIAgentError,
    OpenAIAgentOptions,
    Price,
    ToolCatalog,
    TrialContext,
    absolute_spec,
    resolve_agent,
)
from openwop_eval.core import JSON
from openwop_eval.llm.chat import ChatEndpoint
from tests.agents.conftest import API_KEY, make_agent
from tests.fakes.openai_server import FakeEndpoint, Reply, completion, message_reply


class Port:
    """A tool boundary that answers every call with ``{"ok": true}`` and keeps the calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def call(
        self, tool: str, args: Mapping[str, JSON] | None, transport: str | None = None
    ) -> JSON:
        self.calls.append((tool, dict(args or {})))
        return {"ok": True}


def ask(agent: OpenAIAgent, task_input: JSON = "hello", port: Port | None = None) -> AgentReply:
    context = TrialContext("t", 0, task_input, tool_names=("crm:lookup",))
    return asyncio.run(agent.run(context, port or Port()))


def fails(agent: OpenAIAgent, task_input: JSON = "hello") -> OpenAIAgentError:
    with pytest.raises(OpenAIAgentError) as caught:
        ask(agent, task_input)
    return caught.value


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"role": "assistant", "content": 42}, "the reply's content is a number, not text"),
        ({"content": ["a"]}, "the reply's content is an array, not text"),
        ({"content": None, "tool_calls": {"a": 1}}, "tool_calls is an object, not an array"),
        ({"tool_calls": [7]}, "tool_calls[0] must be an object with a 'function' object"),
        ({"tool_calls": [{"function": {"name": ""}}]}, "tool_calls[0].function.name must be"),
        ({"tool_calls": [{"function": {"name": 3}}]}, "tool_calls[0].function.name must be"),
        ({"content": None}, "the reply has neither text nor tool calls"),
        ({"content": None, "refusal": "I can't"}, "neither text nor tool calls (refusal: I can't)"),
        (
            {"tool_calls": [{"function": {"name": "x"}}] * 65},
            "the reply asks for 65 tool calls at once; at most 64",
        ),
    ],
)
def test_an_unusable_reply_errors_the_trial_with_what_was_wrong(
    endpoint: FakeEndpoint, message: Any, error: str
) -> None:
    endpoint.script(message_reply(message))
    caught = fails(make_agent(endpoint))
    assert error in str(caught)
    assert isinstance(caught.transcript, dict)
    assert len(endpoint.requests) == 1  # the model's own reply: not retried


@pytest.mark.parametrize(
    "body", ["<html>proxy</html>", "[]", '{"choices": []}', '{"choices": [{"message": "hi"}]}']
)
def test_a_body_that_is_not_a_completion_is_retried_then_errors(
    endpoint: FakeEndpoint, body: str
) -> None:
    endpoint.respond = lambda seen: Reply(200, body)
    caught = fails(make_agent(endpoint, max_attempts=2))
    assert len(endpoint.requests) == 2
    assert "attempt 2: the response is not a chat completion" in str(caught)


def test_a_response_over_the_limit_is_not_read_whole(endpoint: FakeEndpoint) -> None:
    endpoint.script(completion("x" * 5000))
    chat = ChatEndpoint(endpoint.url, timeout=5, max_response_bytes=1024)

    async def go() -> Any:
        try:
            return await chat.post({"model": "m", "messages": []})
        finally:
            await chat.aclose()

    result = asyncio.run(go())
    assert (result.kind, result.error) == ("transient", "the response is larger than 1024 bytes")


def test_lenient_where_servers_differ(endpoint: FakeEndpoint) -> None:
    # arguments as an object, no call id: some servers send these
    call = {"function": {"name": "crm__lookup", "arguments": {"id": 1}}}
    endpoint.script(message_reply({"content": None, "tool_calls": [call]}), completion("done"))
    port = Port()
    reply = ask(make_agent(endpoint), port=port)
    assert port.calls == [("crm:lookup", {"id": 1})]
    sent = endpoint.requests[1].body["messages"]
    assert sent[-2]["tool_calls"][0]["id"] == sent[-1]["tool_call_id"] == "call_1_0"
    assert sent[-2]["tool_calls"][0]["function"]["arguments"] == '{"id": 1}'
    assert reply.output == "done"


@pytest.mark.parametrize(
    ("task_input", "messages"),
    [
        ("Where is my order?", [{"role": "user", "content": "Where is my order?"}]),
        ({"message": "Hi"}, [{"role": "user", "content": "Hi"}]),
        (
            {"message": "Refund A-1", "customerId": "C-42"},
            [{"role": "user", "content": '{"message": "Refund A-1", "customerId": "C-42"}'}],
        ),
        ({"orderId": 7}, [{"role": "user", "content": '{"orderId": 7}'}]),
        (
            {"system": "Be brief.", "message": "Hi"},
            [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        ),
        (
            {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]},
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
        ),
    ],
)
def test_the_input_becomes_the_messages(
    endpoint: FakeEndpoint, task_input: JSON, messages: list[dict[str, Any]]
) -> None:
    endpoint.script(completion("ok"))
    assert ask(make_agent(endpoint), task_input).output == "ok"
    assert endpoint.requests[0].body["messages"] == messages


def test_the_catalog_prompt_comes_first_unless_the_input_brings_its_own(
    endpoint: FakeEndpoint,
) -> None:
    catalog = ToolCatalog({}, {}, system_prompt="Catalog prompt.")
    given = [{"role": "system", "content": "Own prompt."}, {"role": "user", "content": "u"}]
    endpoint.script(completion("1"), completion("2"), completion("3"))
    agent = make_agent(endpoint, catalog=catalog)
    ask(agent, {"messages": [{"role": "user", "content": "u"}]})
    ask(agent, {"messages": given})
    ask(agent, {"system": "Task prompt.", "message": "u"})
    sent = [r.body["messages"][0]["content"] for r in endpoint.requests]
    assert sent == ["Catalog prompt.", "Own prompt.", "Task prompt."]


@pytest.mark.parametrize(
    ("task_input", "error"),
    [
        ({"messages": "hi"}, "input.messages must be a non-empty array"),
        ({"messages": []}, "input.messages must be a non-empty array"),
        ({"messages": [{"content": "x"}]}, "input.messages[0] must be an object with a string"),
    ],
)
def test_unusable_input_messages_error_the_trial(
    endpoint: FakeEndpoint, task_input: JSON, error: str
) -> None:
    assert error in str(fails(make_agent(endpoint), task_input))
    assert endpoint.requests == []


def test_no_tools_means_no_tools_field(endpoint: FakeEndpoint) -> None:
    endpoint.script(completion("ok"))
    agent = make_agent(endpoint)
    asyncio.run(agent.run(TrialContext("t", 0, "hi"), Port()))
    assert "tools" not in endpoint.requests[0].body


def test_live_tools_describe_themselves_to_the_model(endpoint: FakeEndpoint) -> None:
    def lookup(args: dict[str, Any]) -> Any:
        """Look an order up."""

    lookup.parameters = {"type": "object", "properties": {"id": {"type": "integer"}}}  # type: ignore[attr-defined]
    agent = OpenAIAgent.from_options(
        "m",
        OpenAIAgentOptions(base_url=endpoint.url, live_tools={"crm:lookup": lookup}),
        environ={},
    )
    endpoint.script(completion("ok"))
    ask(agent)
    [tool] = endpoint.requests[0].body["tools"]
    assert tool["function"] == {
        "name": "crm__lookup",
        "description": "Look an order up.",
        "parameters": lookup.parameters,  # type: ignore[attr-defined]
    }
    assert "authorization" not in endpoint.requests[0].headers


def test_resolve_reads_flags_then_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    agent = resolve_agent("openai:llama3.1:8b")
    assert isinstance(agent, OpenAIAgent)
    assert (agent.model, agent.base_url, agent.agent_id) == (
        "llama3.1:8b",
        "http://127.0.0.1:9/v1",
        "openai:llama3.1:8b",
    )
    assert API_KEY not in repr(agent)
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps({"models": {"m": {"inputPerMillion": 1, "outputPerMillion": 1}}}))
    options = OpenAIAgentOptions("http://127.0.0.1:1/v1", "k", str(catalog), {"m": Price(3, 4)})
    flagged = resolve_agent("openai:m", agent_id="acme.bot", openai=options)
    assert isinstance(flagged, OpenAIAgent)
    assert (flagged.base_url, flagged.agent_id, flagged.price) == (
        "http://127.0.0.1:1/v1",
        "acme.bot",
        Price(3, 4),  # --price over the catalog's
    )


def test_resolve_refuses_what_cannot_work(tmp_path: Path) -> None:
    with pytest.raises(AgentSpecError, match="needs a model"):
        resolve_agent("openai: ")
    with pytest.raises(AgentSpecError, match="for an openai:MODEL agent only"):
        resolve_agent("cmd:true", openai=OpenAIAgentOptions(base_url="http://x/v1"))
    with pytest.raises(AgentSpecError, match="is not a valid tool catalog"):
        resolve_agent("openai:m", openai=OpenAIAgentOptions(tool_catalog=str(tmp_path / "no")))


def test_an_openai_spec_is_never_taken_for_a_path() -> None:
    assert absolute_spec("openai:weird.py:latest") == "openai:weird.py:latest"
