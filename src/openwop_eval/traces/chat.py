"""OpenAI chat messages: assistant ``tool_calls``, ``tool`` results, the final answer.

    [{"role": "user", "content": "Refund A-1001"},
     {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
       "function": {"name": "crm_lookup", "arguments": "{\\"orderId\\": \\"A-1001\\"}"}}]},
     {"role": "tool", "tool_call_id": "call_1", "content": "{\\"status\\": \\"delivered\\"}"},
     {"role": "assistant", "content": "Refunded."}]

``arguments`` is JSON text (decoded; text that is not a JSON object is kept raw, see
:func:`.records.parse_arguments`); a ``tool`` message answers the call with its
``tool_call_id``. The output is the text of the last assistant message when it made no tool
calls — a conversation that ends on tool calls has no answer (null). The legacy
``function_call`` / ``function`` messages are read the same way.

Several user messages make a conversation of several agent turns (:mod:`.turns`): each call
is attributed to the turn it was made in, and each turn has its own reply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core import JSON
from ..core.problems import Loc
from .records import Exchange, TraceCall, TraceError, parse_arguments, parse_result, text_of
from .turns import TurnSplitter


@dataclass
class Pending:
    """A call whose result may still come, later in the conversation."""

    tool: str
    args: dict[str, JSON]
    turn: int = 0
    result: JSON = None
    answered: bool = False
    error: str | None = None

    def answer(self, result: Any, where: Loc) -> None:
        if self.answered:
            raise TraceError("a second result for the same tool call", where)
        self.result, self.answered = parse_result(result), True

    def frozen(self) -> TraceCall:
        return TraceCall(self.tool, self.args, self.result, self.error, self.turn)


class Calls:
    """The calls of one conversation, in order, each findable by its id."""

    def __init__(self) -> None:
        self.order: list[Pending] = []
        self.by_id: dict[str, Pending] = {}

    def add(self, call_id: Any, tool: Any, arguments: Any, where: Loc, turn: int = 0) -> None:
        if not isinstance(tool, str) or not tool:
            raise TraceError("a tool call needs a tool name (a non-empty string)", where)
        pending = Pending(tool, parse_arguments(arguments), turn)
        self.order.append(pending)
        if isinstance(call_id, str) and call_id:
            if call_id in self.by_id:
                raise TraceError(f"the tool call id {call_id!r} is used twice", where)
            self.by_id[call_id] = pending

    def answer(self, call_id: Any, result: Any, where: Loc) -> None:
        pending = self.by_id.get(call_id) if isinstance(call_id, str) else None
        if pending is None:
            raise TraceError(f"a tool result for {call_id!r}, which no tool call has", where)
        pending.answer(result, where)

    def frozen(self) -> tuple[TraceCall, ...]:
        return tuple(p.frozen() for p in self.order)


def read_messages(messages: Sequence[Any]) -> Exchange:
    """The tool calls of a chat conversation, its answer and its turns; a
    :class:`TraceError` (located below the list) when it cannot be read."""
    calls = Calls()
    legacy: list[Pending] = []
    output: JSON = None
    turns = TurnSplitter()
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise TraceError("a message must be an object", (i,))
        role = message.get("role")
        if role == "user":
            turns.user(message.get("content"))
        elif role == "assistant":
            made = _assistant_calls(calls, legacy, message, i, turns.index)
            output = None if made else text_of(message.get("content"))
            turns.reply(output)
        elif role == "tool":
            calls.answer(message.get("tool_call_id"), _content(message), (i, "tool_call_id"))
            turns.act()
        elif role == "function":
            waiting = [p for p in legacy if not p.answered and p.tool == message.get("name")]
            if not waiting:
                raise TraceError("a function result that no function_call asked for", (i,))
            waiting[0].answer(_content(message), (i,))
            turns.act()
    return Exchange(calls.frozen(), output, turns.turns())


def _assistant_calls(
    calls: Calls, legacy: list[Pending], message: dict[str, Any], i: int, turn: int
) -> bool:
    """Add the message's tool calls, made in ``turn``; True when it made any."""
    tool_calls = message.get("tool_calls") or []
    if not isinstance(tool_calls, list):
        raise TraceError("tool_calls must be a list", (i, "tool_calls"))
    for j, call in enumerate(tool_calls):
        where = (i, "tool_calls", j)
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            raise TraceError("a tool call needs a function object {name, arguments}", where)
        calls.add(call.get("id"), function.get("name"), function.get("arguments"), where, turn)
    function_call = message.get("function_call")
    if isinstance(function_call, dict):
        calls.add(None, function_call.get("name"), function_call.get("arguments"), (i,), turn)
        legacy.append(calls.order[-1])
    return bool(tool_calls) or isinstance(function_call, dict)


def _content(message: dict[str, Any]) -> Any:
    content = message.get("content")
    return text_of(content) if isinstance(content, list) else content
