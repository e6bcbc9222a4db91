"""The messages of an ``openai:MODEL`` trial: the first ones from the task input, the model's
replies read strictly, tool arguments, and the transcript kept for the local report.

Everything here reads what an endpoint sent, so every shape is checked and a wrong one is a
:class:`ModelReplyError` naming what was wrong — never a ``KeyError`` three calls later.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core import JSON, canonical_json
from .tool_catalog import Price

MAX_TOOL_CALLS_PER_TURN = 64
RAW_ARGUMENTS = "$raw"
"""The key under which arguments that are not a JSON object are recorded, as sent."""

Message = dict[str, Any]


class ModelReplyError(ValueError):
    """A reply or an input the agent cannot use; the trial errors with this message."""


@dataclass(frozen=True, slots=True)
class ToolRequest:
    """One tool call the model asked for."""

    call_id: str
    function: str
    arguments: str
    """As sent (a JSON object's text, when the endpoint gave an object)."""


@dataclass(frozen=True, slots=True)
class Reply:
    """The model's message: text, tool calls, or both."""

    content: str | None
    calls: tuple[ToolRequest, ...]
    refusal: str | None = None

    def echo(self) -> Message:
        """The assistant message as it goes back to the model in the next request."""
        message: Message = {"role": "assistant", "content": self.content}
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": c.call_id,
                    "type": "function",
                    "function": {"name": c.function, "arguments": c.arguments},
                }
                for c in self.calls
            ]
        return message


def first_messages(task_input: JSON, system_prompt: str | None) -> list[Message]:
    """``input.messages`` as given; else ``input.message`` alone as the user turn; else the
    whole input as the user turn (a string as it is, anything else as JSON text).
    ``input.system`` replaces the catalog's system prompt, which given messages only get
    when they do not begin with one of their own."""
    body: JSON = task_input
    if isinstance(task_input, dict):
        system = task_input.get("system")
        if isinstance(system, str):
            system_prompt = system
            body = {k: v for k, v in task_input.items() if k != "system"}
    if isinstance(body, dict) and "messages" in body:
        messages = _given_messages(body["messages"])
        if system_prompt is not None and (not messages or messages[0]["role"] != "system"):
            messages.insert(0, {"role": "system", "content": system_prompt})
        return messages
    if isinstance(body, dict) and set(body) == {"message"} and isinstance(body["message"], str):
        text = body["message"]
    else:
        text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    head = [{"role": "system", "content": system_prompt}] if system_prompt is not None else []
    return [*head, {"role": "user", "content": text}]


def _given_messages(value: JSON) -> list[Message]:
    if not isinstance(value, list) or not value:
        raise ModelReplyError("input.messages must be a non-empty array of chat messages")
    for index, message in enumerate(value):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise ModelReplyError(f"input.messages[{index}] must be an object with a string 'role'")
    return [dict(m) for m in value if isinstance(m, dict)]


def read_reply(message: Mapping[str, Any], turn: int) -> Reply:
    """The assistant message of a completion, checked."""
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise ModelReplyError(f"the reply's content is {_kind(content)}, not text")
    refusal = message.get("refusal")
    raw = message.get("tool_calls")
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise ModelReplyError(f"the reply's tool_calls is {_kind(raw)}, not an array")
    if len(raw) > MAX_TOOL_CALLS_PER_TURN:
        raise ModelReplyError(
            f"the reply asks for {len(raw)} tool calls at once; at most"
            f" {MAX_TOOL_CALLS_PER_TURN} are taken"
        )
    calls = tuple(_tool_request(call, turn, i) for i, call in enumerate(raw))
    return Reply(content, calls, refusal if isinstance(refusal, str) else None)


def _tool_request(call: Any, turn: int, index: int) -> ToolRequest:
    where = f"tool_calls[{index}]"
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        raise ModelReplyError(f"{where} must be an object with a 'function' object")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise ModelReplyError(f"{where}.function.name must be a non-empty string")
    arguments = function.get("arguments")
    if isinstance(arguments, dict):  # some servers send the object itself
        arguments = json.dumps(arguments, ensure_ascii=False)
    elif arguments is None:
        arguments = ""
    elif not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    call_id = call.get("id")
    if not isinstance(call_id, str) or not call_id:
        call_id = f"call_{turn}_{index}"  # some servers leave it out; the echo needs one
    return ToolRequest(call_id, name, arguments)


def parse_arguments(text: str) -> tuple[dict[str, JSON], str | None]:
    """The arguments as a JSON object, or ``{"$raw": text}`` and what is wrong with them.
    Blank means no arguments (some servers send ``""`` for a function without any)."""
    if not text.strip():
        return {}, None
    try:
        value = json.loads(text, parse_constant=_no_constant)
        canonical_json(value)  # numbers a run can carry exactly, no NaN
    except Exception as exc:  # the decoder and the encoder each have their own errors
        return {RAW_ARGUMENTS: text}, f"the arguments are not valid JSON: {str(exc)[:200]}"
    if not isinstance(value, dict):
        return {RAW_ARGUMENTS: text}, f"the arguments must be a JSON object, got {_kind(value)}"
    return value, None


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number" if isinstance(value, int | float) else "unknown")


@dataclass
class Transcript:
    """What one trial exchanged with the model, for the local report (never in events)."""

    model: str
    base_url: str
    functions: dict[str, str]
    """Function name → OpenWOP tool name, for the tools offered."""
    messages: list[Message]
    turns: list[dict[str, JSON]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_complete: bool = True
    """False once a completion came without usable token counts: the cost is then unknown."""

    def received(
        self, served_model: str | None, usage: Any, finish: Any, retries: list[str]
    ) -> None:
        counts = _token_counts(usage)
        if counts is None:
            self.usage_complete = False
        else:
            self.prompt_tokens += counts[0]
            self.completion_tokens += counts[1]
        self.turns.append(
            {
                "model": served_model,
                "promptTokens": counts[0] if counts else None,
                "completionTokens": counts[1] if counts else None,
                "finishReason": finish if isinstance(finish, str) else None,
                "retries": list(retries),
            }
        )

    def cost(self, price: Price | None) -> float | None:
        if price is None or not self.usage_complete:
            return None
        return price.cost(self.prompt_tokens, self.completion_tokens)

    def as_dict(self, price: Price | None) -> dict[str, JSON]:
        return {
            "agent": "openai",
            "model": self.model,
            "baseUrl": self.base_url,
            "functions": dict(self.functions),
            "messages": [dict(m) for m in self.messages],
            "turns": list(self.turns),
            "usage": {
                "promptTokens": self.prompt_tokens,
                "completionTokens": self.completion_tokens,
                "complete": self.usage_complete,
            },
            "costUsd": self.cost(price),
        }


def _token_counts(usage: Any) -> tuple[int, int] | None:
    if not isinstance(usage, dict):
        return None
    counts = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**53 for n in counts):
        return counts[0], counts[1]  # type: ignore[return-value]
    return None
