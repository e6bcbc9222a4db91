"""What the spans of one trace mean: its tool calls, its answer, the trial it records.

Tool spans are recognised in the spellings agents are instrumented with — OpenTelemetry
GenAI (``gen_ai.operation.name = execute_tool``, ``gen_ai.tool.name``,
``gen_ai.tool.call.arguments``/``.result``), OpenInference (``openinference.span.kind =
TOOL``, ``tool.name``, ``input.value``/``output.value``), the Vercel AI SDK
(``ai.toolCall.*``), Google ADK (``gcp.vertex.agent.tool_call_args``/``tool_response``) and
Pydantic AI's older format (``tool_arguments``/``tool_response``) — and ordered by start
time. GenAI arguments are opt-in and often absent: they are recovered from the ``tool_call``
parts of a chat span's messages with the same call id (and from OpenInference's flattened
``llm.output_messages`` tool calls); a call whose arguments cannot
be found is recorded with none, so a step that names arguments fails on it. A tool span whose
status is an error, or that has an ``error.type``, is a failed call.

MCP spans (``mcp.method.name``) are tool calls when the method is ``tools/call`` — with or
without ``execute_tool`` — and never otherwise (``tools/list``, ``initialize``,
notifications). One call is often recorded by several layers, so an MCP ``tools/call`` span
counts only when no other tool span records it: not when a tool span encloses it within the
same agent (no ``invoke_agent`` or ``AGENT`` span between them) — an agent framework's tool
span over its MCP client's span, a client span over the server span that answered it — and,
for a server's span (kind ``SERVER``), not when the trace holds any client-side tool span.
The enclosing span is the call; what it lacks of the arguments, result and error is taken
from the MCP span beneath it when both name the same tool. The conventions record no server
name, so the tool is named as the span names it (``gen_ai.tool.name``, else the span name's
``tools/call {tool}``); ``--map``'s ``tools`` can name it as the suite does.

The answer is read from the root span; when it carries none, from the outermost agent span
that does (``invoke_agent``, OpenInference ``AGENT``), then from the chat span that ended
last. From a span: the text of the last message of ``gen_ai.output.messages`` (or of
OpenInference's ``llm.output_messages``), else ``output.value`` (decoded when
``output.mime_type`` is ``application/json``), else ``ai.response.text``.

A trace of several agent invocations is a conversation of several turns (:mod:`.span_turns`);
a trace that names a session (``gen_ai.conversation.id``, ``session.id``) may be one part of a
conversation whose other parts are other traces (:mod:`.sessions`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..core import JSON
from .otlp import Span
from .records import Trace, TraceCall, TraceError, TraceTurn, parse_arguments, parse_result
from .span_attrs import (
    KIND,
    OPERATION,
    answer_of,
    is_agent,
    is_chat,
    messages_of,
    parts_of,
    unresolved_chain,
)
from .span_turns import span_turns
from .turns import with_final_output

TASK_ID = "openwop.eval.task_id"
TRIAL = "openwop.eval.trial"
COST_USD = "openwop.eval.cost_usd"
SESSIONS = ("gen_ai.conversation.id", "session.id")
"""The attributes that name the conversation a trace is part of, in order of preference."""

_NAMES = ("gen_ai.tool.name", "tool.name", "ai.toolCall.name")
_IDS = ("gen_ai.tool.call.id", "tool_call.id", "tool.call.id", "ai.toolCall.id")
_ARGS = (
    "gen_ai.tool.call.arguments",
    "ai.toolCall.args",
    "ai.toolCall.input",
    "gcp.vertex.agent.tool_call_args",
    "input.value",
    "tool_arguments",  # Pydantic AI's instrumentation format 2
)
_RESULTS = (
    "gen_ai.tool.call.result",
    "ai.toolCall.result",
    "ai.toolCall.output",
    "gcp.vertex.agent.tool_response",
    "output.value",
    "tool_response",
)
_MCP_METHOD = "mcp.method.name"
_NAMED_SPANS = ("execute_tool ", "tools/call ")
_FLAT_CALL = re.compile(
    r"llm\.output_messages\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\.(id|function\.arguments)"
)


def trace_of(spans: Sequence[Span], source: str) -> Trace:
    """The trace its spans record; a :class:`TraceError` names the span it cannot read."""
    ordered = sorted(spans, key=lambda s: (s.start, s.order))
    ids = {s.span_id for s in spans}
    roots = (s for s in ordered if s.parent_id is None or s.parent_id not in ids)
    root = next(roots, ordered[0])  # parents in a cycle: the earliest span stands in
    recovered = _recovered_arguments(ordered)
    turns = span_turns(ordered)
    tools = [s for s in ordered if _is_tool(s)]
    repeated, beneath = _mcp_repeats(tools, ordered)
    calls, seen = [], set()
    for span in tools:
        call_id = _first(span.attrs, _IDS)
        if span.order in repeated or (isinstance(call_id, str) and call_id in seen):
            continue  # one call instrumented twice (say, OpenInference and GenAI)
        seen.add(call_id)
        found = recovered.get(call_id) if isinstance(call_id, str) else None
        call = _call(span, found, beneath.get(span.order))
        calls.append(replace(call, turn=turns.of.get(span.order, 0)))
    task_id, trial = _trial_of(root, ordered)
    session = _session_of(root, ordered)
    cost = root.attrs.get(COST_USD)
    output = _output(root, ordered)
    return Trace(
        source=source,
        keys=(root.trace_id,) if session is None else (root.trace_id, session),
        calls=tuple(calls),
        output=output,
        task_id=task_id,
        trial=trial,
        cost_usd=cost if _number(cost) else None,
        latency_ms=root.duration_ms,
        error=None if root.error is None else f"the root span ended in error: {root.error}",
        turns=_answered(root, turns.turns, output),
        session=session,
        start=ordered[0].start,
    )


def _is_tool(span: Span) -> bool:
    attrs = span.attrs
    if _MCP_METHOD in attrs:  # an MCP span: only tools/call is a call, execute_tool or not
        return bool(attrs[_MCP_METHOD] == "tools/call")
    return (
        attrs.get(OPERATION) == "execute_tool"
        or attrs.get(KIND) == "TOOL"
        or any(name in attrs for name in _NAMES)
    )


def _call(span: Span, recovered: Any, inner: Span | None) -> TraceCall:
    """The call a tool span records; ``inner``, the MCP span beneath it naming the same tool,
    gives what it lacks."""
    tool = _tool_name(span)
    if not isinstance(tool, str) or not tool:
        raise TraceError(f"span {span.span_id} is a tool span without a tool name")
    arguments = _first(span.attrs, _ARGS)
    arguments = recovered if arguments is None else arguments
    result, error = _first(span.attrs, _RESULTS), _error(span)
    if inner is not None:
        arguments = _first(inner.attrs, _ARGS) if arguments is None else arguments
        result = _first(inner.attrs, _RESULTS) if result is None else result
        error = _error(inner) if error is None else error
    return TraceCall(tool, parse_arguments(arguments), parse_result(result), error)


def _tool_name(span: Span) -> Any:
    tool = _first(span.attrs, _NAMES)
    prefix = next((p for p in _NAMED_SPANS if span.name.startswith(p)), None)
    if tool is None and prefix is not None:
        tool = span.name.removeprefix(prefix).strip()
    return tool


def _error(span: Span) -> str | None:
    """The status message of a failed span, else its ``error.type`` (the conventions mark a
    failed call by both, but not every instrumentation sets both)."""
    kind = span.attrs.get("error.type")
    if not span.error and isinstance(kind, str) and kind:
        return kind
    return span.error


def _mcp_repeats(tools: Sequence[Span], spans: Sequence[Span]) -> tuple[set[int], dict[int, Span]]:
    """The MCP ``tools/call`` spans (by ``order``) that another tool span records, and for
    each recording span the first MCP span beneath it that names the same tool."""
    outermost = _outermost_tools(spans, {s.order for s in tools})
    client_side = any(s.kind != "SERVER" or _MCP_METHOD not in s.attrs for s in tools)
    repeated: set[int] = set()
    beneath: dict[int, Span] = {}
    for span in tools:
        if _MCP_METHOD not in span.attrs:
            continue
        outer = outermost.get(span.order)
        if outer is not None:
            repeated.add(span.order)
            if _tool_name(outer) == _tool_name(span):
                beneath.setdefault(outer.order, span)
        elif span.kind == "SERVER" and client_side:
            repeated.add(span.order)  # the server's view of a call the client side records
    return repeated, beneath


def _outermost_tools(spans: Sequence[Span], tools: set[int]) -> dict[int, Span | None]:
    """Each span's outermost enclosing tool span within its agent, or None. Every chain of
    parents is walked once (memoised), so a deep or cyclic trace costs linear time."""
    by_id = {s.span_id: s for s in spans}
    memo: dict[int, Span | None] = {}

    def within_agent(node: Span) -> Span | None:
        parent = by_id.get(node.parent_id or "")
        return None if parent is None or is_agent(parent.attrs) else parent

    for span in spans:
        for member in reversed(unresolved_chain(span, memo, within_agent)):
            parent = by_id.get(member.parent_id or "")
            if parent is None or is_agent(parent.attrs) or parent.order not in memo:
                memo[member.order] = None  # the top of its agent, or where a cycle closes
            else:
                above = memo[parent.order]
                if above is None and parent.order in tools:
                    above = parent
                memo[member.order] = above
    return memo


def _recovered_arguments(spans: Iterable[Span]) -> dict[str, Any]:
    """Call id → arguments, from the tool-call parts of every span's chat messages."""
    found: dict[str, Any] = {}
    for span in spans:
        for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
            for message in messages_of(span.attrs.get(key)):
                for part in parts_of(message):
                    if part.get("type") == "tool_call" and isinstance(part.get("id"), str):
                        found[part["id"]] = part.get("arguments")
        found.update(_flat_calls(span.attrs))
    return found


def _flat_calls(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """OpenInference's ``llm.output_messages.<i>.message.tool_calls.<j>.tool_call.*``."""
    calls: dict[tuple[str, str], dict[str, Any]] = {}
    for key, value in attrs.items():
        match = _FLAT_CALL.fullmatch(key) if key.startswith("llm.output_messages.") else None
        if match is not None:
            calls.setdefault((match[1], match[2]), {})[match[3]] = value
    return {
        c["id"]: c.get("function.arguments") for c in calls.values() if isinstance(c.get("id"), str)
    }


def _trial_of(root: Span, spans: Sequence[Span]) -> tuple[str | None, int | None]:
    """``openwop.eval.task_id`` and ``.trial``: on the root, another span, or the resource."""
    for attrs in (root.attrs, *(s.attrs for s in spans), root.resource):
        if TASK_ID in attrs:
            task_id, trial = attrs[TASK_ID], attrs.get(TRIAL)
            if not isinstance(task_id, str) or not task_id:
                raise TraceError(f"{TASK_ID} must be a non-empty string")
            if isinstance(trial, str) and trial.isascii() and trial.isdigit() and len(trial) < 10:
                trial = int(trial)
            if trial is not None and (type(trial) is not int or trial < 0):
                raise TraceError(f"{TRIAL} must be an integer ≥ 0 (trials count from 0)")
            return task_id, trial
    return None, None


def _answered(root: Span, turns: tuple[TraceTurn, ...], output: JSON) -> tuple[TraceTurn, ...]:
    """One turn answers what the trace does; of several, the last answers what the root (a
    wrapper around the invocations) records, when it records an answer."""
    if len(turns) == 1:
        return with_final_output(turns, output)
    wrapper = not is_agent(root.attrs) and not is_chat(root.attrs)
    answer = answer_of(root.attrs) if wrapper else None
    return turns if answer is None else with_final_output(turns, answer)


def _session_of(root: Span, spans: Sequence[Span]) -> str | None:
    """The session the trace is part of: on the root, another span, or the resource."""
    for attrs in (root.attrs, *(s.attrs for s in spans), root.resource):
        for key in SESSIONS:
            value = attrs.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def _output(root: Span, spans: Sequence[Span]) -> JSON:
    agents = [s for s in spans if s.attrs.get(OPERATION) == "invoke_agent"]
    agents += [s for s in spans if s.attrs.get(KIND) == "AGENT"]
    chats = [s for s in spans if is_chat(s.attrs)]
    chats.sort(key=lambda s: (s.end, s.order), reverse=True)
    for span in (root, *agents, *chats):
        found = answer_of(span.attrs)
        if found is not None:
            return found
    return None


def _first(attrs: Mapping[str, Any], keys: Iterable[str]) -> Any:
    return next((attrs[k] for k in keys if attrs.get(k) is not None), None)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1e300
