"""A conversation task (``tests/conversations/suites.py``: rebook a cancelled flight over three
agent turns) played by a ``cmd:`` agent — one process for the whole conversation, a ``user``
line per next turn — and by an ``openai:`` agent over either API — one chat, each turn sent
after every earlier turn's messages, tool calls and results. Each passes with its calls
attributed to the turns they were made in; an agent gone mid-conversation errors as a broken
protocol, an endpoint gone mid-conversation as infrastructure."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from openwop_eval.agents import Price
from openwop_eval.agents.command import CommandAgent
from tests.agents.conftest import Ran, make_agent, run_suite
from tests.conversations.suites import TASK, suite
from tests.fakes.openai_server import (
    FakeEndpoint,
    Reply,
    completion,
    response_calls,
    response_text,
    tool_calls,
)

FIRST = TASK["input"]["message"]
SCRIPT = TASK["x-openwop-eval"]["conversation"]["user"]["script"]
OFFER = "Your flight was cancelled. I can offer AB200 at 09:00."
DONE = "Done: you are rebooked on AB200."
BYE = "You're welcome, you are rebooked."
RIGHT_PATH = [("bookings:get", 0), ("flights:search", 0), ("bookings:rebook", 1)]

AGENT = """
import json, os, sys

mode, log = sys.argv[1], open(sys.argv[2], "a")


def receive():
    line = sys.stdin.readline()
    log.write(json.dumps({"pid": os.getpid(), "line": line}) + "\\n")
    log.flush()
    if not line:
        sys.exit(0)
    return json.loads(line)


def send(message):
    print(json.dumps(message), flush=True)


def call(tool, args):
    send({"type": "tool-call", "id": tool, "tool": tool, "args": args})
    return receive()["result"]


message = receive()
while True:
    turn = message.get("turn")
    if turn in (None, 0):
        booking = call("bookings:get", {"flight": "AB123"})
        options = call("flights:search", {"from": booking["flight"]})
        offer = options[0]["flight"]
        output = f"Your flight was {booking['status']}. I can offer {offer} at 09:00."
    elif turn == 1:
        done = call("bookings:rebook", {"flight": "AB200"})
        output = f"Done: you are {done['status']} on {done['flight']}."
    else:
        output = "You're welcome, you are rebooked."
    send({"type": "final", "output": output, "costUsd": 0.25})
    if mode == "leaves":
        sys.exit(0)
    message = receive()
"""
"""Plays the rebooking turns over the ``cmd:`` protocol, logging each line it receives (and
its end of input) with its pid; ``leaves`` exits after its first ``final``."""


def turns_of_calls(ran: Ran) -> list[tuple[str, int]]:
    return [
        (e["payload"]["toolName"], e["payload"]["x-openwop-eval"]["turn"])
        for e in ran.events
        if e["type"] == "agent.tool-called"
    ]


# --- cmd: ------------------------------------------------------------------------------


def command(tmp: Path, mode: str = "plays") -> tuple[CommandAgent, Path]:
    script, log = tmp / "agent.py", tmp / "received.jsonl"
    script.write_text(AGENT)
    return CommandAgent(f"{sys.executable} {script} {mode} {log}"), log


def received(log: Path) -> list[tuple[int, str]]:
    """(pid, line) of each line the agent read, "" at its end of input."""
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    return [(entry["pid"], entry["line"]) for entry in entries]


def test_a_cmd_agent_plays_the_conversation_in_one_process(tmp_path: Path) -> None:
    agent, log = command(tmp_path)
    ran = run_suite(suite(), agent, tmp_path)
    assert ran.trial.passed, ran.diagnostics()
    assert turns_of_calls(ran) == RIGHT_PATH
    lines = received(log)
    assert len({pid for pid, _ in lines}) == 1  # one process, every turn
    assert lines[-1][1] == ""  # its input was closed when the conversation ended
    opened = [json.loads(line) for _, line in lines[:-1]]
    kinds = [message["type"] for message in opened]
    assert kinds == ["start", "tool-result", "tool-result", "user", "tool-result", "user"]
    start, second, third = opened[0], opened[3], opened[5]
    assert (start["turn"], start["messages"]) == (0, [{"role": "user", "content": FIRST}])
    assert start["input"] == TASK["input"]
    assert second == {
        "type": "user",
        "turn": 1,
        "message": SCRIPT[0],
        "messages": [
            {"role": "user", "content": FIRST},
            {"role": "assistant", "content": OFFER},
            {"role": "user", "content": SCRIPT[0]},
        ],
    }
    assert (third["turn"], third["message"], len(third["messages"])) == (2, SCRIPT[1], 5)
    assert ran.scored()[0]["costUsd"] == 0.75  # each turn's reported cost, summed


def test_one_exchange_keeps_the_start_line_it_always_had(tmp_path: Path) -> None:
    task = {k: v for k, v in TASK.items() if k != "x-openwop-eval"}
    task["expected"] = {"kind": "golden", "match": {"strategy": "contains", "value": "AB200"}}
    agent, log = command(tmp_path)
    ran = run_suite(suite(task), agent, tmp_path)
    assert ran.trial.passed, ran.diagnostics()
    start = {
        "type": "start",
        "taskId": TASK["taskId"],
        "trial": 0,
        "input": TASK["input"],
        "memory": [],
        "tools": ["bookings:get", "bookings:rebook", "flights:search", "payments:charge"],
    }
    assert received(log)[0][1] == json.dumps(start, ensure_ascii=False) + "\n"


def test_a_cmd_agent_that_exits_after_its_first_reply_breaks_the_protocol(
    tmp_path: Path,
) -> None:
    agent, log = command(tmp_path, "leaves")
    ran = run_suite(suite(), agent, tmp_path)
    diagnostics = ran.diagnostics()
    assert diagnostics["errorKind"] == "protocol"
    assert "after its final message while the conversation went on" in diagnostics["error"]
    assert "the user message of turn 1 had no answer" in diagnostics["error"]
    assert not ran.trial.passed
    assert turns_of_calls(ran) == RIGHT_PATH[:2]  # turn 0's calls, kept as made
    assert json.loads(received(log)[0][1])["type"] == "start"


# --- openai: ----------------------------------------------------------------------------

USAGE = {"prompt_tokens": 100, "completion_tokens": 10}
RESPONSES_USAGE = {"input_tokens": 100, "output_tokens": 10}
BOOKING = {"flight": "AB123", "status": "cancelled"}
REBOOKED = {"status": "rebooked", "flight": "AB200"}


def chat_turns() -> list[list[Reply]]:
    """The model's replies, turn by turn: two calls then the offer; the rebooking; goodbye."""
    return [
        [
            tool_calls(("bookings__get", {"flight": "AB123"}), usage=USAGE),
            tool_calls(("flights__search", {"from": "AB123"}), usage=USAGE),
            completion(OFFER, USAGE),
        ],
        [
            tool_calls(("bookings__rebook", {"flight": "AB200"}), usage=USAGE),
            completion(DONE, USAGE),
        ],
        [completion(BYE, USAGE)],
    ]


def responses_turns() -> list[list[Reply]]:
    return [
        [
            response_calls(("bookings__get", {"flight": "AB123"}), usage=RESPONSES_USAGE),
            response_calls(("flights__search", {"from": "AB123"}), usage=RESPONSES_USAGE),
            response_text(OFFER, RESPONSES_USAGE),
        ],
        [
            response_calls(("bookings__rebook", {"flight": "AB200"}), usage=RESPONSES_USAGE),
            response_text(DONE, RESPONSES_USAGE),
        ],
        [response_text(BYE, RESPONSES_USAGE)],
    ]


def play(endpoint: FakeEndpoint, tmp: Path, api: str, turns: list[list[Reply]]) -> Ran:
    for replies in turns:
        endpoint.script(*replies)
    agent = make_agent(endpoint, api=api, prices={"agent-model": Price(1.0, 2.0)})
    return run_suite(suite(), agent, tmp)


def test_an_openai_agent_continues_one_chat_across_the_turns(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    ran = play(endpoint, tmp_path, "chat", chat_turns())
    assert ran.trial.passed, ran.diagnostics()
    assert turns_of_calls(ran) == RIGHT_PATH
    assert len(endpoint.requests) == 6
    # The second request of turn 2 holds turn 1's messages, tool calls and results.
    sent = endpoint.requests[4].body["messages"]
    assert [m["role"] for m in sent] == [
        "user", "assistant", "tool", "assistant", "tool", "assistant",  # turn 1
        "user", "assistant", "tool",  # turn 2 so far
    ]  # fmt: skip
    assert (sent[0]["content"], sent[6]["content"]) == (FIRST, SCRIPT[0])
    assert json.loads(sent[2]["content"]) == BOOKING
    assert sent[5]["content"] == OFFER
    assert json.loads(sent[8]["content"]) == REBOOKED
    assert endpoint.requests[5].body["messages"][-1] == {"role": "user", "content": SCRIPT[1]}


def test_each_turns_transcript_and_cost_are_that_turns(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    ran = play(endpoint, tmp_path, "chat", chat_turns())
    transcripts = ran.diagnostics()["transcript"]
    assert [entry["turn"] for entry in transcripts] == [0, 1, 2]
    second = transcripts[1]["transcript"]
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert second["messages"][0]["content"] == SCRIPT[0]
    assert len(second["turns"]) == 2
    assert second["usage"] == {"promptTokens": 200, "completionTokens": 20, "complete": True}
    # six replies of 100 + 10 tokens at $1 / $2 per million, counted once each
    assert ran.scored()[0]["costUsd"] == pytest.approx(6 * (100 + 2 * 10) / 1_000_000)


def test_an_openai_agent_over_the_responses_api_continues_its_items(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    ran = play(endpoint, tmp_path, "responses", responses_turns())
    assert ran.trial.passed, ran.diagnostics()
    assert turns_of_calls(ran) == RIGHT_PATH
    sent: list[dict[str, Any]] = endpoint.requests[4].body["input"]
    kinds = [item.get("type") or item["role"] for item in sent]
    assert kinds == [
        "user", "function_call", "function_call_output", "function_call",
        "function_call_output", "assistant",  # turn 1
        "user", "function_call", "function_call_output",  # turn 2 so far
    ]  # fmt: skip
    assert json.loads(sent[2]["output"]) == BOOKING
    assert json.loads(sent[8]["output"]) == REBOOKED
    assert (sent[5]["content"], sent[6]["content"]) == (OFFER, SCRIPT[0])
    assert all(body.body["store"] is False for body in endpoint.requests)


def test_an_endpoint_gone_mid_conversation_is_infrastructure(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    first, *_ = chat_turns()
    ran = play(endpoint, tmp_path, "chat", [first, [Reply(503, "down")] * 4])
    diagnostics = ran.diagnostics()
    assert diagnostics["errorKind"] == "infrastructure"
    assert f"no completion from {endpoint.url}/chat/completions" in diagnostics["error"]
    assert turns_of_calls(ran) == RIGHT_PATH[:2]
    assert len(endpoint.requests) == 3 + 4  # turn 1, then every attempt at turn 2
    completed = next(e for e in ran.events if e["type"] == "agent.invocation-completed")
    assert completed["payload"]["x-openwop-eval"]["error"] == "infrastructure"
    # the turns it played, and the turn it failed in with what that turn exchanged
    transcripts = diagnostics["transcript"]
    assert [entry["turn"] for entry in transcripts] == [0, 1]
    assert transcripts[1]["transcript"]["messages"][0]["content"] == SCRIPT[0]
