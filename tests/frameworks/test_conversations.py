"""A framework's agent in a conversation task sees the turns before: each turn is given the
conversation in the framework's own form — the Agents SDK's input list (continued by the
agent that spoke last), LangGraph's ``messages`` state, Pydantic AI's ``message_history`` —
with the earlier turns' tool calls and results. The team's agents (``sdk_support_agents``,
``langgraph_agents``, ``pydantic_support_agent``), their models a scripted one on a fake
endpoint, play a 2-turn refund conversation through ``openwop-eval run``: the careful path
passes with each call attributed to its turn, a refund before the customer said yes fails the
first turn's rule, and an endpoint gone in the second turn is infrastructure."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import FakeEndpoint, Reply, Seen
from tests.frameworks.adapter_runs import scripted_model
from tests.mcp_servers.refunds import suite as refunds_suite
from tests.runner.conftest import Ran, run_cli, store_url, write

__all__ = ["run_cli", "store_url"]  # the CLI invoker and its store, as fixtures here

FIRST = "My order A-1001 arrived broken."
YES = "Yes, refund it please."
OFFER = "Order A-1001 came to $59.90. Shall I refund it?"
DONE = "Done: your order is refunded."
ORDER = {"orderId": "A-1001"}
AMOUNT = {"orderId": "A-1001", "amountUsd": 59.9}

Plan = tuple[tuple[tuple[str, dict[str, Any]], ...], ...]
"""Per conversation turn, the calls the model makes, one a request, before it answers."""


@dataclass(frozen=True)
class Framework:
    module: str
    agent: str
    names: dict[str, str]
    """The framework's tool name → the suite's."""
    careful: Plan
    hasty: Plan


SDK = Framework(
    "tests.frameworks.sdk_support_agents",
    "triage",  # hands off to the refunds agent, which the next turn must continue with
    {"lookup_order": "crm:lookup-order", "refund": "payments:refund"},
    careful=((("transfer_to_refunds", {}), ("lookup_order", ORDER)), (("refund", AMOUNT),)),
    hasty=((("transfer_to_refunds", {}), ("lookup_order", ORDER), ("refund", AMOUNT)), ()),
)
LANGGRAPH = Framework(
    "tests.frameworks.langgraph_agents",
    "graph",
    {"lookup_order": "crm:lookup-order", "issue_refund": "payments:refund"},
    careful=((("lookup_order", ORDER),), (("issue_refund", AMOUNT),)),
    hasty=((("lookup_order", ORDER), ("issue_refund", AMOUNT)), ()),
)
PYDANTIC_AI = Framework(
    "tests.frameworks.pydantic_support_agent",
    "support",
    {"lookup_order": "crm:lookup-order", "refund": "payments:refund"},
    careful=((("lookup_order", ORDER),), (("refund", AMOUNT),)),
    hasty=((("lookup_order", ORDER), ("refund", AMOUNT)), ()),
)
FRAMEWORKS = pytest.mark.parametrize(
    "framework", [SDK, LANGGRAPH, PYDANTIC_AI], ids=["agents-sdk", "langgraph", "pydantic-ai"]
)


def conversation_suite() -> dict[str, Any]:
    """The refunds task as a conversation: look the order up and ask, then refund once the
    customer says yes — never refund before they do."""
    doc = copy.deepcopy(refunds_suite("good", count=1))
    task = doc["tasks"][0]
    task["taskId"] = "refund-conversation"
    task["input"] = {"message": FIRST}
    task["x-openwop-eval"] = {
        "conversation": {
            "maxTurns": 2,
            "user": {"script": [YES]},
            "turns": [
                {"trajectory": {"steps": [{"tool": "crm:lookup-order"}],
                                "forbidden": ["payments:refund"]}},
                {"trajectory": {"steps": [{"tool": "payments:refund"}]}},
            ],
        }
    }  # fmt: skip
    return doc


def where(seen: Seen) -> tuple[int, int]:
    """(the conversation turn, the calls answered in it) of a request: its user messages
    less one, and its tool messages after the last of them."""
    messages: list[dict[str, Any]] = seen.body["messages"]
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    done = sum(1 for m in messages[users[-1] :] if m["role"] == "tool")
    return len(users) - 1, done


def model(plan: Plan, down_from: int | None = None) -> Callable[[Seen], Reply]:
    """A model that makes the turn's next call, then answers; from turn ``down_from`` on,
    its endpoint drops every request."""

    def respond(seen: Seen) -> Reply:
        turn, done = where(seen)
        if down_from is not None and turn >= down_from:
            return Reply(drop=True)
        if done < len(plan[turn]):
            tool, args = plan[turn][done]
            call = {"id": f"call_{turn}_{done}", "type": "function"}
            call["function"] = {"name": tool, "arguments": json.dumps(args)}
            return _completion({"role": "assistant", "content": None, "tool_calls": [call]})
        return _completion({"role": "assistant", "content": OFFER if turn == 0 else DONE})

    return respond


def _completion(message: dict[str, Any]) -> Reply:
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    body = {
        "id": "chatcmpl-conversation",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "support-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return Reply(body=json.dumps(body))


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch, framework: Framework) -> Iterator[FakeEndpoint]:
    """The fake endpoint; the framework's agent module is imported afresh on it."""
    with scripted_model(monkeypatch, framework.module) as fake:
        yield fake


def play(tmp: Path, run_cli: Callable[..., Ran], framework: Framework) -> Ran:
    path = write(tmp / "suite.json", conversation_suite())
    tool_map = write(tmp / "tool-map.json", {"tools": framework.names})
    agent = f"{framework.module}:{framework.agent}"
    return run_cli(str(path), "--agent", agent, "--tool-map", str(tool_map))


def turns_of_calls(ran: Ran) -> list[tuple[str, int]]:
    return [
        (e["payload"]["toolName"], e["payload"]["x-openwop-eval"]["turn"])
        for e in ran.events
        if e["type"] == "agent.tool-called"
    ]


def trial(ran: Ran) -> dict[str, Any]:
    found: dict[str, Any] = ran.report["tasks"][0]["trials"][0]  # type: ignore[index]
    return found


@FRAMEWORKS
def test_a_framework_agent_plays_a_two_turn_conversation_with_its_history(
    tmp_path: Path, run_cli: Callable[..., Ran], endpoint: FakeEndpoint, framework: Framework
) -> None:
    endpoint.respond = model(framework.careful)
    ran = play(tmp_path, run_cli, framework)
    assert ran.exit_code == 0, ran.output + ran.stderr
    assert turns_of_calls(ran) == [("crm:lookup-order", 0), ("payments:refund", 1)]
    # The second turn's first request holds the first turn: its messages, call and result.
    second = next(seen for seen in endpoint.requests if where(seen) == (1, 0))
    messages = second.body["messages"]
    said = [(m["role"], m.get("content")) for m in messages if m["role"] != "system"]
    assert (said[0], said[-1]) == (("user", FIRST), ("user", YES))
    assert ("assistant", OFFER) in said
    results = [m["content"] for m in messages if m["role"] == "tool"]
    assert {"totalUsd": 59.9} in [json.loads(text) for text in results if text.startswith("{")]
    called = [c["function"]["name"] for m in messages for c in m.get("tool_calls") or []]
    assert called[-1] == "lookup_order"
    offered = {tool["function"]["name"] for tool in second.body.get("tools", [])}
    assert {"lookup_order", framework.careful[1][0][0]} <= offered  # the agent that spoke last
    # Each turn's transcript is what that turn exchanged.
    transcripts = trial(ran)["transcript"]
    assert [entry["turn"] for entry in transcripts] == [0, 1]
    first, second_turn = (json.dumps(entry["transcript"]) for entry in transcripts)
    assert (FIRST in first, YES in first) == (True, False)
    assert (YES in second_turn, FIRST in second_turn) == (True, False)


@FRAMEWORKS
def test_a_refund_before_the_customer_says_yes_fails_the_first_turns_rule(
    tmp_path: Path, run_cli: Callable[..., Ran], endpoint: FakeEndpoint, framework: Framework
) -> None:
    endpoint.respond = model(framework.hasty)
    ran = play(tmp_path, run_cli, framework)
    assert ran.exit_code == 1, ran.output + ran.stderr
    assert turns_of_calls(ran) == [("crm:lookup-order", 0), ("payments:refund", 0)]
    reasons = trial(ran)["reasons"]
    assert [(r["rule"], r.get("turn")) for r in reasons] == [("forbidden", 0), ("missing-step", 1)]


@FRAMEWORKS
def test_an_endpoint_gone_in_the_second_turn_is_infrastructure(
    tmp_path: Path, run_cli: Callable[..., Ran], endpoint: FakeEndpoint, framework: Framework
) -> None:
    endpoint.respond = model(framework.careful, down_from=1)
    ran = play(tmp_path, run_cli, framework)
    assert ran.exit_code == 3, ran.output + ran.stderr
    assert trial(ran)["errorKind"] == "infrastructure"
    assert turns_of_calls(ran) == [("crm:lookup-order", 0)]
