"""An ``mcp:`` agent in a conversation task: the command runs once per agent turn with the
conversation so far on stdin, and the trial's MCP servers — the same addresses, the same
config file — last the whole conversation and end with it. An agent on the OpenAI Agents
SDK (``agents_sdk_agent.py``, a scripted model on a fake endpoint) plays a 2-turn refund
conversation: its calls through the servers are attributed to the turns they were made in,
and a call made a turn too early fails that turn's rule."""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import json
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from openwop_eval.agents.base import TrialContext
from openwop_eval.agents.mcp import McpAgent
from openwop_eval.core import JSON
from tests.fakes.openai_server import FakeEndpoint, Reply, Seen, serve
from tests.mcp_servers.refunds import suite as refunds_suite
from tests.mcp_servers.test_mcp_agent import refusal
from tests.runner.conftest import Ran, run_cli, store_url, write

__all__ = ["run_cli", "store_url"]  # the CLI invoker and its store, as fixtures here

AGENT = Path(__file__).with_name("agents_sdk_agent.py")
FIRST = "My order A-1001 arrived broken."
YES = "Yes, refund it please."
OFFER = "Order A-1001 came to $59.90. Shall I refund it?"
DONE = "Done: your order is refunded."
LOOKUP = ("lookup-order", {"orderId": "A-1001"})
REFUND = ("refund", {"orderId": "A-1001", "amountUsd": 59.9})

needs_sdk = pytest.mark.skipif(
    importlib.util.find_spec("agents") is None,
    reason="the OpenAI Agents SDK is not installed: pip install -e '.[test]'",
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


Plan = Mapping[int, tuple[tuple[str, dict[str, Any]], ...]]
"""Per conversation turn, the calls the scripted model makes, one a request, before it answers."""

CAREFUL: Plan = {0: (LOOKUP,), 1: (REFUND,)}
HASTY: Plan = {0: (LOOKUP, REFUND), 1: ()}


def model(plan: Plan) -> Callable[[Seen], Reply]:
    """A model for the Agents SDK agent, whose one user message is the conversation so far
    (the JSON of what the agent read on stdin): it makes the turn's next call, then answers."""

    def respond(seen: Seen) -> Reply:
        messages: list[dict[str, Any]] = seen.body["messages"]
        said = json.loads(next(m["content"] for m in messages if m["role"] == "user"))
        turn = sum(1 for m in said if m["role"] == "user") - 1
        done = sum(1 for m in messages if m["role"] == "tool")
        if done < len(plan[turn]):
            tool, args = plan[turn][done]
            call = {"id": f"call_{done}", "type": "function"}
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
    }
    return Reply(body=json.dumps(body))


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    with serve() as fake:
        yield fake


def play(tmp: Path, run_cli: Callable[..., Ran], endpoint: FakeEndpoint, plan: Plan) -> Ran:
    endpoint.respond = model(plan)
    path = write(tmp / "suite.json", conversation_suite())
    command = f"mcp:{sys.executable} {AGENT} {{mcp_config}} {endpoint.url}"
    return run_cli(str(path), "--agent", command)


def turns_of_calls(ran: Ran) -> list[tuple[str, int]]:
    return [
        (e["payload"]["toolName"], e["payload"]["x-openwop-eval"]["turn"])
        for e in ran.events
        if e["type"] == "agent.tool-called"
    ]


@needs_sdk
def test_an_agents_sdk_agent_over_mcp_plays_a_two_turn_conversation(
    tmp_path: Path, run_cli: Callable[..., Ran], endpoint: FakeEndpoint
) -> None:
    ran = play(tmp_path, run_cli, endpoint, CAREFUL)
    assert ran.exit_code == 0, ran.output + ran.stderr
    assert turns_of_calls(ran) == [("crm:lookup-order", 0), ("payments:refund", 1)]
    replies = [
        e["payload"]["content"]
        for e in ran.events
        if e["type"] == "agent.message" and e["payload"]["role"] == "assistant"
    ]
    assert replies == [OFFER, DONE]
    # The second run of the command read the whole conversation so far.
    last = json.loads(endpoint.requests[-1].body["messages"][1]["content"])
    assert last == [
        {"role": "user", "content": FIRST},
        {"role": "assistant", "content": OFFER},
        {"role": "user", "content": YES},
    ]


@needs_sdk
def test_a_refund_before_the_customer_says_yes_fails_the_first_turns_rule(
    tmp_path: Path, run_cli: Callable[..., Ran], endpoint: FakeEndpoint
) -> None:
    ran = play(tmp_path, run_cli, endpoint, HASTY)
    assert ran.exit_code == 1, ran.output + ran.stderr
    assert turns_of_calls(ran) == [("crm:lookup-order", 0), ("payments:refund", 0)]
    reasons = ran.report["tasks"][0]["trials"][0]["reasons"]  # type: ignore[index]
    assert [(r["rule"], r.get("turn")) for r in reasons] == [("forbidden", 0), ("missing-step", 1)]
    assert ran.summary is not None
    assert ran.summary["tasks"][0]["score"] == 1  # the output score stays honest


TURN_AGENT = """
import asyncio, json, os, sys
from mcp import Client

async def main():
    messages = json.loads(sys.stdin.read())
    config = json.load(open(sys.argv[1]))["mcpServers"]
    async with Client(config["crm"]["url"]) as client:
        await client.call_tool("lookup-order", {"orderId": "A-1001"})
    print(json.dumps({"config": sys.argv[1], "url": os.environ["OPENWOP_MCP_URL"],
                      "crm": config["crm"]["url"], "read": len(messages)}))

asyncio.run(main())
"""
"""One turn: reads the conversation, makes one call through the crm server, and says which
servers it was given."""


class Port:
    """A tool boundary that notes the turn each call was made in."""

    def __init__(self) -> None:
        self.turn = 0
        self.seen: list[tuple[str, int]] = []

    async def call(
        self, tool: str, args: Mapping[str, JSON] | None, transport: str | None = None
    ) -> JSON:
        self.seen.append((tool, self.turn))
        return {"ok": True}


def test_the_servers_last_the_conversation_and_end_with_it(tmp_path: Path) -> None:
    script = tmp_path / "turn_agent.py"
    script.write_text(TURN_AGENT)
    agent = McpAgent(f"{sys.executable} {script} {{mcp_config}}")
    context = TrialContext("t", 0, FIRST, tool_names=("crm:lookup-order",))

    async def converse() -> tuple[list[Any], str, list[tuple[str, int]]]:
        port = Port()
        messages: tuple[dict[str, JSON], ...] = ({"role": "user", "content": FIRST},)
        conversation = agent.converse(context, port)
        outputs = []
        try:
            for turn in range(2):
                port.turn = turn
                asked = TrialContext("t", 0, FIRST, turn=turn, messages=messages)
                outputs.append((await conversation.reply(asked)).output)
                messages += (
                    {"role": "assistant", "content": "…"},
                    {"role": "user", "content": YES},
                )
        finally:
            await conversation.aclose()
        return outputs, await refusal(outputs[0]["crm"]), port.seen

    outputs, ended, seen = asyncio.run(converse())
    first, second = outputs
    assert (first["read"], second["read"]) == (1, 3)
    assert {k: first[k] for k in ("config", "url", "crm")} == {
        k: second[k] for k in ("config", "url", "crm")
    }
    assert seen == [("crm:lookup-order", 0), ("crm:lookup-order", 1)]
    assert "no trial is served at this address" in ended
    assert not Path(first["config"]).exists()  # the config file went with the servers
