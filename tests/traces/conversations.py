"""A rebooking conversation and the recordings of agents that played it: OpenAI chat messages
(hand-written, as an agent loop keeps them), Responses items (the ``openai`` package's own
types, dumped) and OpenTelemetry spans (the SDK's, encoded by the OTLP exporter).

The suite's task must look the booking up and search flights in its first turn without
rebooking, rebook in its second, never charge, and end on a reply that says "rebooked".
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openai.types.responses.response_input_item import FunctionCallOutput

from .otel import MS, T0, Recorder

TASK = "rebook-after-cancellation"
FIRST = "My flight AB123 was cancelled, can you rebook me?"

Call = tuple[str, dict[str, Any], Any]
GET: Call = ("bookings_get", {"flight": "AB123"}, {"flight": "AB123", "status": "cancelled"})
SEARCH: Call = ("flights_search", {"origin": "AB123"}, [{"flight": "AB200", "departs": "09:00"}])
REBOOK: Call = ("bookings_rebook", {"flight": "AB200"}, {"status": "rebooked", "flight": "AB200"})
CHARGE: Call = ("payments_charge", {"amountUsd": 50}, {"status": "charged"})
ALL_CALLS = (GET, SEARCH, REBOOK, CHARGE)


@dataclass(frozen=True)
class Turn:
    user: str
    calls: tuple[Call, ...] = ()
    reply: str | None = "Noted."


CAREFUL = (
    Turn(FIRST, (GET, SEARCH), "Your flight was cancelled. I can offer AB200 at 09:00."),
    Turn("Yes, the 9 am one please.", (REBOOK,), "Done: you are rebooked on AB200."),
    Turn("Thanks, that's all.", (), "You're welcome, you are rebooked."),
)
HASTY = (
    Turn(FIRST, (GET, SEARCH, REBOOK), "I went ahead: you are rebooked on AB200."),
    Turn("Oh, fine. Thanks.", (), "You are rebooked."),
)
"""Rebooks before the user chose: the whole path is right, the first two turns' rules not."""
LATE_FORBIDDEN = (
    *CAREFUL[:2],
    Turn("Thanks, that's all.", (CHARGE,), "You are rebooked; I charged the change fee."),
)
"""Right until its last turn, where it calls a forbidden tool."""

CONVERSATION = {
    "maxTurns": 4,
    "user": {"script": ["Yes, the 9 am one please.", "Thanks, that's all."]},
    "turns": [
        {"trajectory": {"steps": [{"tool": "bookings_get"}], "forbidden": ["bookings_rebook"]}},
        {"trajectory": {"steps": [{"tool": "bookings_rebook"}]}},
    ],
}
TASK_DOC: dict[str, Any] = {
    "taskId": TASK,
    "input": {"message": FIRST},
    "expected": {
        "kind": "golden",
        "match": {"strategy": "contains", "value": "rebooked"},
        "trajectory": {
            "steps": [
                {"tool": "bookings_get"},
                {"tool": "flights_search"},
                {"tool": "bookings_rebook", "args": {"flight": "AB200"}},
            ],
            "forbidden": ["payments_*"],
        },
    },
    "fixtures": {"toolResponses": [{"tool": t, "response": r} for t, _, r in ALL_CALLS]},
    "x-openwop-eval": {"conversation": CONVERSATION},
}
"""Its fixtures answer what the recordings do: a live run of the same calls is the same."""


def suite(conversation: dict[str, Any] | None = CONVERSATION, **changes: Any) -> dict[str, Any]:
    """The one-task suite; ``conversation=None``: the task is one input, one reply."""
    task = copy.deepcopy(TASK_DOC)
    if conversation is None:
        del task["x-openwop-eval"]
    else:
        task["x-openwop-eval"]["conversation"] = {**copy.deepcopy(conversation), **changes}
    return {
        "suiteId": "test.openwop.evals.conversation-traces",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 1},
        "trials": {"count": 1},
        "tasks": [task],
    }


def write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


# OpenAI chat messages, as an agent loop on the chat completions API keeps them.


def chat_messages(turns: tuple[Turn, ...]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are an airline agent."}]
    made = 0
    for turn in turns:
        messages.append({"role": "user", "content": turn.user})
        if turn.calls:
            ids = [f"call_{made + i}" for i in range(len(turn.calls))]
            made += len(turn.calls)
            requests = [
                {"id": i, "type": "function", "function": {"name": t, "arguments": json.dumps(a)}}
                for i, (t, a, _) in zip(ids, turn.calls, strict=True)
            ]
            messages.append({"role": "assistant", "content": None, "tool_calls": requests})
            messages += [
                {"role": "tool", "tool_call_id": i, "content": json.dumps(result)}
                for i, (_, _, result) in zip(ids, turn.calls, strict=True)
            ]
        if turn.reply is not None:
            messages.append({"role": "assistant", "content": turn.reply})
    return messages


def chat_record(turns: tuple[Turn, ...], **extra: Any) -> dict[str, Any]:
    return {"taskId": TASK, "trial": 0, "messages": chat_messages(turns), **extra}


# Responses items, as ``RunResult.to_input_list()`` of the Agents SDK keeps them.


def response_items(turns: tuple[Turn, ...]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    made = 0
    for turn in turns:
        items.append({"role": "user", "content": turn.user})
        for tool, args, result in turn.calls:
            call_id = f"fc_{made}"
            made += 1
            call = ResponseFunctionToolCall(
                type="function_call", call_id=call_id, name=tool, arguments=json.dumps(args)
            )
            answer = FunctionCallOutput(
                type="function_call_output", call_id=call_id, output=json.dumps(result)
            )
            items += [call.model_dump(), answer.model_dump()]
        if turn.reply is not None:
            text = ResponseOutputText(type="output_text", text=turn.reply, annotations=[])
            message = ResponseOutputMessage(
                id=f"msg_{made}",
                type="message",
                role="assistant",
                status="completed",
                content=[text],
            )
            items.append(message.model_dump())
    return items


# OpenTelemetry spans under the GenAI conventions.

TRIAL_ATTRIBUTES = {"openwop.eval.task_id": TASK, "openwop.eval.trial": 0}


def invocation(
    recorder: Recorder, start: int, turn: Turn, parent: Any = None, **attributes: Any
) -> int:
    """One agent invocation answering ``turn``: an ``invoke_agent`` span recording the
    user's message and the reply, an ``execute_tool`` span per call. Returns its end."""
    said = [{"role": "user", "parts": [{"type": "text", "content": turn.user}]}]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": turn.reply}]}]
    end = start + (len(turn.calls) + 1) * 10 * MS
    agent = recorder.span(
        "invoke_agent airline",
        start,
        end,
        parent,
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.input.messages": json.dumps(said),
            "gen_ai.output.messages": json.dumps(answer),
            **attributes,
        },
    )
    for i, (tool, args, result) in enumerate(turn.calls):
        at = start + (i + 1) * 10 * MS
        tool_attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": f"call_{start}_{i}",
            "gen_ai.tool.call.arguments": json.dumps(args),
            "gen_ai.tool.call.result": json.dumps(result),
        }
        recorder.span(f"execute_tool {tool}", at, at + MS, agent, tool_attributes)
    return end


def one_trace(turns: tuple[Turn, ...]) -> dict[str, Any]:
    """The whole conversation in one trace: a span around an invocation per turn."""
    recorder = Recorder()
    end = T0 + 1000 * MS * len(turns)
    root = recorder.span("conversation", T0, end, None, TRIAL_ATTRIBUTES)
    for i, turn in enumerate(turns):
        invocation(recorder, T0 + 1000 * MS * i, turn, root)
    return recorder.export()


def session_traces(turns: tuple[Turn, ...], session: str = "conv-7") -> dict[str, Any]:
    """A trace per turn, each naming the conversation; only the first names the trial."""
    recorder = Recorder()
    for i, turn in enumerate(turns):
        named = TRIAL_ATTRIBUTES if i == 0 else {}
        attributes = {"gen_ai.conversation.id": session, **named}
        invocation(recorder, T0 + 1000 * MS * i, turn, **attributes)
    return recorder.export()
