"""The messages of an ``openai:MODEL`` trial: the first ones from the task input, the model's
replies read strictly, tool arguments, and the transcript kept for the local report — and
:class:`ChatWire`, the Chat Completions shapes of the loop (:class:`Wire`).

Everything here reads what an endpoint sent, so every shape is checked and a wrong one is a
:class:`ModelReplyError` naming what was wrong — never a ``KeyError`` three calls later.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..core import JSON, canonical_json
from ..llm.chat import CHAT, Api
from .tool_catalog import Price

MAX_TOOL_CALLS_PER_TURN = 64
RAW_ARGUMENTS = "$raw"
"""The key under which arguments that are not a JSON object are recorded, as sent."""

Message = dict[str, Any]
ApiName = Literal["chat", "responses"]


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


Shape = Callable[[Message, str], list[Message]]
"""What a given message (at ``input.messages[i]``) is sent as."""


def first_messages(
    task_input: JSON, system_prompt: str | None, shape: Shape | None = None
) -> list[Message]:
    """``input.messages`` as given (or as ``shape`` makes them); else ``input.message`` alone
    as the user turn; else the whole input as the user turn (a string as it is, anything else
    as JSON text). ``input.system`` replaces the catalog's system prompt, which given
    messages only get when they do not begin with one of their own."""
    body: JSON = task_input
    if isinstance(task_input, dict):
        system = task_input.get("system")
        if isinstance(system, str):
            system_prompt = system
            body = {k: v for k, v in task_input.items() if k != "system"}
    if isinstance(body, dict) and "messages" in body:
        messages = _given_messages(body["messages"], shape)
        if system_prompt is not None and (not messages or messages[0].get("role") != "system"):
            messages.insert(0, {"role": "system", "content": system_prompt})
        return messages
    if isinstance(body, dict) and set(body) == {"message"} and isinstance(body["message"], str):
        text = body["message"]
    else:
        text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    head = [{"role": "system", "content": system_prompt}] if system_prompt is not None else []
    return [*head, {"role": "user", "content": text}]


def opening(
    task_input: JSON, system_prompt: str | None, messages: Sequence[Mapping[str, JSON]]
) -> list[Message]:
    """A conversation's start: its system prompt (``input.system``, else ``system_prompt``)
    and its ``messages`` so far, which read the same in either API."""
    if isinstance(task_input, dict) and isinstance(task_input.get("system"), str):
        system_prompt = task_input["system"]
    head = [{"role": "system", "content": system_prompt}] if system_prompt is not None else []
    return [*head, *(dict(message) for message in messages)]


def _given_messages(value: JSON, shape: Shape | None) -> list[Message]:
    if not isinstance(value, list) or not value:
        raise ModelReplyError("input.messages must be a non-empty array of chat messages")
    messages: list[Message] = []
    for index, message in enumerate(value):
        where = f"input.messages[{index}]"
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise ModelReplyError(f"{where} must be an object with a string 'role'")
        messages += shape(dict(message), where) if shape else [dict(message)]
    return messages


def read_reply(message: Mapping[str, Any], turn: int) -> Reply:
    """The assistant message of a completion, checked."""
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise ModelReplyError(f"the reply's content is {kind_of(content)}, not text")
    refusal = message.get("refusal")
    raw = message.get("tool_calls")
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise ModelReplyError(f"the reply's tool_calls is {kind_of(raw)}, not an array")
    at_most_calls(len(raw))
    calls = tuple(_tool_request(call, turn, i) for i, call in enumerate(raw))
    return Reply(content, calls, refusal if isinstance(refusal, str) else None)


def _tool_request(call: Any, turn: int, index: int) -> ToolRequest:
    where = f"tool_calls[{index}]"
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        raise ModelReplyError(f"{where} must be an object with a 'function' object")
    return tool_request(f"{where}.function", function, call.get("id"), f"call_{turn}_{index}")


def tool_request(where: str, call: Mapping[str, Any], call_id: Any, fallback: str) -> ToolRequest:
    """A call's ``name`` and ``arguments`` (at ``where``), checked, with its id (``fallback``
    when the server left it out: the echo needs one)."""
    name = call.get("name")
    if not isinstance(name, str) or not name:
        raise ModelReplyError(f"{where}.name must be a non-empty string")
    arguments = call.get("arguments")
    if isinstance(arguments, dict):  # some servers send the object itself
        arguments = json.dumps(arguments, ensure_ascii=False)
    elif arguments is None:
        arguments = ""
    elif not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    if not isinstance(call_id, str) or not call_id:
        call_id = fallback
    return ToolRequest(call_id, name, arguments)


def at_most_calls(count: int) -> None:
    """A reply may ask for at most :data:`MAX_TOOL_CALLS_PER_TURN` calls (checked before
    any is read)."""
    if count > MAX_TOOL_CALLS_PER_TURN:
        raise ModelReplyError(
            f"the reply asks for {count} tool calls at once; at most"
            f" {MAX_TOOL_CALLS_PER_TURN} are taken"
        )


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
        return {RAW_ARGUMENTS: text}, f"the arguments must be a JSON object, got {kind_of(value)}"
    return value, None


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def kind_of(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number" if isinstance(value, int | float) else "unknown")


@dataclass(frozen=True, slots=True)
class Served:
    """What a reply says of itself: the model that answered, its (input, output) token
    counts when usable, and why it stopped."""

    model: str | None
    tokens: tuple[int, int] | None
    finish: str | None


@dataclass
class Transcript:
    """What one trial exchanged with the model, for the local report (never in events)."""

    model: str
    base_url: str
    functions: dict[str, str]
    """Function name → OpenWOP tool name, for the tools offered."""
    messages: list[Message]
    """What this trial (a conversation: this turn) sent and received: chat messages or
    Responses items."""
    api: ApiName = "chat"
    turns: list[dict[str, JSON]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_complete: bool = True
    """False once a reply came without usable token counts: the cost is then unknown."""
    earlier: list[Message] = field(default_factory=list)
    """A conversation: its earlier turns' messages, sent before :attr:`messages` in every
    request and reported with their own turns."""

    def conversation(self) -> list[Message]:
        """The conversation as the next request sends it."""
        return [*self.earlier, *self.messages]

    def received(self, served: Served, retries: list[str]) -> None:
        counts = served.tokens
        if counts is None:
            self.usage_complete = False
        else:
            self.prompt_tokens += counts[0]
            self.completion_tokens += counts[1]
        self.turns.append(
            {
                "model": served.model,
                "promptTokens": counts[0] if counts else None,
                "completionTokens": counts[1] if counts else None,
                "finishReason": served.finish,
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
            "api": self.api,
            "model": self.model,
            "baseUrl": self.base_url,
            "functions": dict(self.functions),
            "messages" if self.api == "chat" else "items": [dict(m) for m in self.messages],
            "turns": list(self.turns),
            "usage": {
                "promptTokens": self.prompt_tokens,
                "completionTokens": self.completion_tokens,
                "complete": self.usage_complete,
            },
            "costUsd": self.cost(price),
        }


def token_counts(usage: Any, keys: tuple[str, str]) -> tuple[int, int] | None:
    """The input and output token counts under ``keys`` of a reply's ``usage``, when both
    are counts."""
    if not isinstance(usage, dict):
        return None
    counts = usage.get(keys[0]), usage.get(keys[1])
    if all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**53 for n in counts):
        return counts[0], counts[1]  # type: ignore[return-value]
    return None


def text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class Wire(Protocol):
    """The shapes of one API in the tool loop: the loop itself (turns, retries, tool calls,
    cost, errors) is :class:`~.openai_agent.OpenAIAgent`'s, whichever the API."""

    name: ApiName
    endpoint: Api

    def tool(self, function: str, description: str, parameters: dict[str, Any]) -> Message:
        """The definition of one offered function."""
        ...

    def first(self, task_input: JSON, system_prompt: str | None) -> list[Message]:
        """The conversation's start (see :func:`first_messages`)."""
        ...

    def request(
        self, model: str, conversation: list[Message], tools: list[Message], temperature: Any
    ) -> dict[str, Any]: ...

    def served(self, body: Mapping[str, Any]) -> Served: ...

    def read(self, body: Mapping[str, Any], turn: int) -> Reply:
        """The model's reply, checked (a :class:`ModelReplyError` when unusable)."""
        ...

    def echo(self, reply: Reply) -> list[Message]:
        """The reply as the next request sends it back."""
        ...

    def tool_output(self, call: ToolRequest, text: str) -> Message:
        """What a call answered (its JSON text), as the next request sends it."""
        ...


class ChatWire:
    """Chat Completions: ``messages`` in, ``choices[0].message`` out, ``tool`` messages."""

    name: ApiName = "chat"
    endpoint = CHAT

    def tool(self, function: str, description: str, parameters: dict[str, Any]) -> Message:
        spec = {"name": function, "description": description, "parameters": parameters}
        return {"type": "function", "function": spec}

    def first(self, task_input: JSON, system_prompt: str | None) -> list[Message]:
        return first_messages(task_input, system_prompt)

    def request(
        self, model: str, conversation: list[Message], tools: list[Message], temperature: Any
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": model, "messages": conversation}
        if tools:
            payload["tools"] = tools
        if temperature is not None:
            payload["temperature"] = temperature
        return payload

    def served(self, body: Mapping[str, Any]) -> Served:
        choice = body["choices"][0]  # there is one: the endpoint accepted the body
        return Served(
            text_or_none(body.get("model")),
            token_counts(body.get("usage"), ("prompt_tokens", "completion_tokens")),
            text_or_none(choice.get("finish_reason")),
        )

    def read(self, body: Mapping[str, Any], turn: int) -> Reply:
        return read_reply(body["choices"][0]["message"], turn)

    def echo(self, reply: Reply) -> list[Message]:
        return [reply.echo()]

    def tool_output(self, call: ToolRequest, text: str) -> Message:
        return {"role": "tool", "tool_call_id": call.call_id, "content": text}
