"""The Responses API shapes of an ``openai:MODEL`` trial (``--agent-api responses``): input
items in, ``output`` items out, ``function_call`` / ``function_call_output`` items.

Stateless: every request sends the whole conversation again with ``store: false``, never a
``previous_response_id`` — an OpenAI-compatible server need keep nothing between turns. The
model's own items that are not answers (``reasoning``…) are not sent back: a stateless
request could only refer to them by an id the server did not keep.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..core import JSON
from ..llm.chat import RESPONSES
from .openai_messages import (
    ApiName,
    Message,
    ModelReplyError,
    Reply,
    Served,
    ToolRequest,
    at_most_calls,
    first_messages,
    kind_of,
    read_reply,
    text_or_none,
    token_counts,
    tool_request,
)

ROLES = ("user", "assistant", "system", "developer")
"""The roles of an input message; a chat ``tool`` message becomes a ``function_call_output``."""


class ResponsesWire:
    """``POST /responses``: ``input`` items in, ``output`` items out."""

    name: ApiName = "responses"
    endpoint = RESPONSES

    def tool(self, function: str, description: str, parameters: dict[str, Any]) -> Message:
        # strict mode would need every property required and no others: schemas as written
        return {
            "type": "function",
            "name": function,
            "description": description,
            "parameters": parameters,
            "strict": False,
        }

    def first(self, task_input: JSON, system_prompt: str | None) -> list[Message]:
        return first_messages(task_input, system_prompt, input_items)

    def request(
        self, model: str, conversation: list[Message], tools: list[Message], temperature: Any
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": model, "input": conversation, "store": False}
        if tools:
            payload["tools"] = tools
        if temperature is not None:
            payload["temperature"] = temperature
        return payload

    def served(self, body: Mapping[str, Any]) -> Served:
        status = text_or_none(body.get("status"))
        details = body.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        return Served(
            text_or_none(body.get("model")),
            token_counts(body.get("usage"), ("input_tokens", "output_tokens")),
            text_or_none(reason) if status == "incomplete" else status,
        )

    def read(self, body: Mapping[str, Any], turn: int) -> Reply:
        if body.get("status") == "failed":
            raise ModelReplyError(f"the response failed: {_error_text(body.get('error'))}")
        output: list[Any] = body["output"]  # an array: the endpoint accepted the body
        at_most_calls(sum(isinstance(i, dict) and i.get("type") == "function_call" for i in output))
        texts: list[str] = []
        refusals: list[str] = []
        calls: list[ToolRequest] = []
        for index, item in enumerate(output):
            where = f"output[{index}]"
            if not isinstance(item, dict):
                raise ModelReplyError(f"{where} is {kind_of(item)}, not an item")
            if item.get("type") == "function_call":
                fallback = f"call_{turn}_{index}"
                calls.append(tool_request(where, item, item.get("call_id"), fallback))
            elif item.get("type") == "message":
                _message_text(item, where, texts, refusals)
        content = "".join(texts) if texts else None
        if content is None and not calls and body.get("status") == "incomplete":
            reason = self.served(body).finish or "no reason given"
            raise ModelReplyError(f"the response is incomplete ({reason}): no text, no tool calls")
        return Reply(content, tuple(calls), "".join(refusals) or None)

    def echo(self, reply: Reply) -> list[Message]:
        items: list[Message] = []
        if reply.content is not None:
            items.append({"role": "assistant", "content": reply.content})
        for call in reply.calls:
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.call_id,
                    "name": call.function,
                    "arguments": call.arguments,
                }
            )
        return items

    def tool_output(self, call: ToolRequest, text: str) -> Message:
        return {"type": "function_call_output", "call_id": call.call_id, "output": text}


def _message_text(
    item: Mapping[str, Any], where: str, texts: list[str], refusals: list[str]
) -> None:
    """The ``output_text`` and ``refusal`` parts of an output message (other parts: none)."""
    content = item.get("content")
    if not isinstance(content, list):
        raise ModelReplyError(f"{where}.content is {kind_of(content)}, not an array")
    for index, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "output_text":
            text = part.get("text")
            if not isinstance(text, str):
                raise ModelReplyError(f"{where}.content[{index}].text is {kind_of(text)}, not text")
            texts.append(text)
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            refusals.append(part["refusal"])


def _error_text(error: Any) -> str:
    if not isinstance(error, dict):
        return "no error given"
    code, message = error.get("code"), error.get("message")
    text = f"{code}: {message}" if isinstance(code, str) else str(message)
    return text[:300]


def input_items(message: Message, where: str) -> list[Message]:
    """A given chat message as input items: a message (text parts as ``input_text``), an
    assistant's ``tool_calls`` as ``function_call`` items, a ``tool`` message as a
    ``function_call_output`` — so one suite's inputs serve either API."""
    role = message["role"]
    if role == "tool":
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise ModelReplyError(f"{where}.tool_call_id must be a non-empty string")
        output = message.get("content")
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        return [{"type": "function_call_output", "call_id": call_id, "output": text}]
    if role not in ROLES:
        raise ModelReplyError(f"{where}: a {role!r} message has no Responses API form")
    items: list[Message] = []
    if message.get("content") is not None:
        items.append({"role": role, "content": _content(message["content"], role, where)})
    if role == "assistant" and message.get("tool_calls") is not None:
        items += _calls(message["tool_calls"], where)
    if not items:
        raise ModelReplyError(f"{where} has neither content nor tool calls")
    return items


def _content(content: Any, role: str, where: str) -> Any:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ModelReplyError(f"{where}.content must be text or an array of content parts")
    if role == "assistant":  # an assistant's input content is its text
        return "".join(p["text"] for p in content if _is_text(p))
    return [{"type": "input_text", "text": p["text"]} if _is_text(p) else p for p in content]


def _is_text(part: Any) -> bool:
    return (
        isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
    )


def _calls(tool_calls: Any, where: str) -> list[Message]:
    try:
        reply = read_reply({"tool_calls": tool_calls}, 0)
    except ModelReplyError as exc:
        raise ModelReplyError(f"{where}: {exc}") from None
    return ResponsesWire().echo(Reply(None, reply.calls))
