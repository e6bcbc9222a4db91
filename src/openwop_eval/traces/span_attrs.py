"""What a span's attributes say, in the spellings agents are instrumented with: whether it is
an agent invocation or a model call, the messages it records, its answer.

Messages are read from the GenAI conventions' ``gen_ai.input.messages`` and
``gen_ai.output.messages`` (JSON text or structured values, ``parts`` or the older
``content``) and from OpenInference's flattened ``llm.input_messages.<i>.message.*`` and
``llm.output_messages.<i>.message.*``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from ..core import JSON
from ..files.documents import parse_document
from .otlp import Span
from .records import parse_result, text_of

KIND = "openinference.span.kind"
OPERATION = "gen_ai.operation.name"
_CHAT_OPERATIONS = ("chat", "generate_content", "text_completion")
_FLAT_CONTENT = re.compile(r"llm\.output_messages\.(\d+)\.message\.content")
_FLAT_INPUT = re.compile(r"llm\.input_messages\.(\d+)\.message\.(role|content)")


def is_agent(attrs: Mapping[str, Any]) -> bool:
    """An agent invocation: GenAI ``invoke_agent``, OpenInference ``AGENT``."""
    return attrs.get(OPERATION) == "invoke_agent" or attrs.get(KIND) == "AGENT"


def is_chat(attrs: Mapping[str, Any]) -> bool:
    """A model call: GenAI ``chat``/``generate_content``/``text_completion``, OpenInference
    ``LLM``."""
    return attrs.get(OPERATION) in _CHAT_OPERATIONS or attrs.get(KIND) == "LLM"


def answer_of(attrs: Mapping[str, Any]) -> JSON:
    """The answer a span records: the text of the last output message, else ``output.value``
    (decoded when its mime type is JSON), else ``ai.response.text``; None without one."""
    messages = messages_of(attrs.get("gen_ai.output.messages"))
    if messages:
        texts = [p.get("content") for p in parts_of(messages[-1]) if p.get("type") == "text"]
        text = "".join(t for t in texts if isinstance(t, str))
        if text:
            return text
    flat = _flat_content(attrs)
    if flat is not None:
        return flat
    value = attrs.get("output.value")
    if value is not None:
        json_text = attrs.get("output.mime_type") == "application/json"
        return parse_result(value) if json_text else value
    response = attrs.get("ai.response.text")
    return response if isinstance(response, str) else None


def input_roles(attrs: Mapping[str, Any]) -> list[tuple[Any, str | None]]:
    """(role, text) of each input message of a model call or an agent invocation."""
    messages = messages_of(attrs.get("gen_ai.input.messages"))
    if messages:
        return [(m.get("role"), _text(m)) for m in messages]
    flat: dict[str, dict[str, Any]] = {}
    for key, value in attrs.items():
        match = _FLAT_INPUT.fullmatch(key) if key.startswith("llm.input_messages.") else None
        if match is not None:
            flat.setdefault(match[1], {})[match[2]] = value
    ordered = sorted(flat.items(), key=lambda pair: (len(pair[0]), pair[0]))
    return [(m.get("role"), text_of(m.get("content"))) for _, m in ordered]


def user_said(attrs: Mapping[str, Any]) -> Any:
    """What the user said to an invocation: its last user input message's text, else an
    OpenInference agent's ``input.value``; None when it records neither."""
    said = [text for role, text in input_roles(attrs) if role == "user"]
    if said:
        return said[-1]
    value = attrs.get("input.value")
    return value if attrs.get(KIND) == "AGENT" and isinstance(value, str) else None


def messages_of(value: Any) -> list[dict[str, Any]]:
    """GenAI messages, recorded as JSON text or as structured attribute values."""
    if isinstance(value, str):
        value, _, problems = parse_document(value, ".json")
        if problems:
            return []
    if not isinstance(value, list):
        return []
    return [m for m in value if isinstance(m, dict)]


def parts_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    parts = message.get("parts")
    if isinstance(parts, list):
        return [p for p in parts if isinstance(p, dict)]
    text = text_of(message.get("content"))  # the older, chat-completions-like spelling
    return [{"type": "text", "content": text}] if text is not None else []


def _text(message: dict[str, Any]) -> str | None:
    texts = [p.get("content") for p in parts_of(message) if p.get("type") == "text"]
    found = [t for t in texts if isinstance(t, str)]
    return "".join(found) if found else None


def _flat_content(attrs: Mapping[str, Any]) -> str | None:
    """The content of OpenInference's last ``llm.output_messages.<i>.message.content``."""
    found = [(m[1], v) for k, v in attrs.items() if (m := _FLAT_CONTENT.fullmatch(k))]
    found.sort(key=lambda pair: (len(pair[0]), pair[0]))  # numerically, however long
    texts = [v for _, v in found if isinstance(v, str)]
    return texts[-1] if texts else None


def unresolved_chain(
    span: Span, known: Mapping[int, object], climb: Callable[[Span], Span | None]
) -> list[Span]:
    """``span`` and the ancestors ``climb`` leads to, nearest first, up to the first one
    already in ``known`` (by ``order``), the top, or where a cycle closes: what a memoised
    walk of a trace's parents still has to resolve, so a deep or cyclic trace costs linear
    time."""
    chain: list[Span] = []
    on_chain: set[int] = set()
    node: Span | None = span
    while node is not None and node.order not in known and node.order not in on_chain:
        chain.append(node)
        on_chain.add(node.order)
        node = climb(node)
    return chain
