"""Conversations as files: records of chat messages or Responses items, or one bare list.

A record names its trial and holds its conversation:

    {"taskId": "refund", "trial": 0, "messages": [...]}      (or "items": [...])

with optional ``id`` (its ``--map`` key), ``output`` (the answer, in place of the one read
from the conversation), ``costUsd``, ``latencyMs``, ``error`` (the agent failed: the trial
errors) and ``metadata`` (ignored). A file is JSON lines of records, a JSON record or list
of records, or one bare conversation — a JSON list, or JSON lines, of messages or items —
whose ``--map`` key is the file. Whether a conversation is chat messages or Responses
items is read from its content. A record's ``output`` is the answer of its last answered
turn too, when it is graded as a conversation.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import Field, StrictFloat, StrictInt, StrictStr, ValidationError

from ..core.closed import Closed
from ..core.problems import Loc, format_loc
from .chat import read_messages
from .records import Exchange, Trace, TraceError, TraceProblem
from .responses import read_items
from .turns import with_final_output

_ITEM_TYPES = (
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    "item_reference",
    "mcp_call",
    "mcp_list_tools",
    "mcp_approval_request",
    "mcp_approval_response",
)


class Record(Closed):
    task_id: StrictStr | None = Field(None, alias="taskId", min_length=1)
    trial: StrictInt | None = Field(None, ge=0)
    id: StrictStr | None = None
    messages: list[Any] | None = None
    items: list[Any] | None = None
    output: Any = None
    cost_usd: StrictFloat | StrictInt | None = Field(None, alias="costUsd", ge=0)
    latency_ms: StrictFloat | StrictInt | None = Field(None, alias="latencyMs", ge=0)
    error: StrictStr | None = None
    metadata: Any = None


def is_record(value: Any) -> bool:
    return isinstance(value, dict) and ("messages" in value or "items" in value)


def is_entry(value: Any) -> bool:
    """A message or an item of a bare conversation."""
    return isinstance(value, dict) and ("role" in value or "type" in value)


def read_conversation(values: Sequence[Any]) -> Exchange:
    """Chat messages or Responses items, told apart by the items' ``type``."""
    responses = any(isinstance(v, dict) and v.get("type") in _ITEM_TYPES for v in values)
    return read_items(values) if responses else read_messages(values)


def record_trace(value: Any, source: str, line: int | None, prefix: Loc = ()) -> Trace:
    """The trace of one record; a :class:`TraceProblem` (raised) when it cannot be read."""
    try:
        record = Record.model_validate(value)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise UnreadableError(
            TraceProblem(source, error["msg"], line, format_loc((*prefix, *error["loc"])))
        ) from None
    if (record.messages is None) == (record.items is None):
        raise UnreadableError(TraceProblem(source, "give messages or items, not both", line))
    key = "messages" if record.messages is not None else "items"
    try:
        read = read_conversation(record.messages or record.items or [])
    except TraceError as exc:
        raise UnreadableError(exc.problem(source, line, (*prefix, key))) from None
    output, turns = read.output, read.turns
    if "output" in record.model_fields_set:
        output, turns = record.output, with_final_output(turns, record.output)
    return Trace(
        source=f"{source}:{line}" if line is not None else source,
        keys=(record.id,) if record.id is not None else (),
        calls=read.calls,
        output=output,
        task_id=record.task_id,
        trial=record.trial,
        cost_usd=record.cost_usd,
        latency_ms=record.latency_ms,
        error=record.error,
        turns=turns,
    )


def file_trace(values: Sequence[Any], source: str, lines: Sequence[int] | None) -> Trace:
    """A file that is one bare conversation; its ``--map`` key is the file."""
    try:
        read = read_conversation(values)
    except TraceError as exc:
        if lines is None or not exc.loc or not isinstance(exc.loc[0], int):
            raise UnreadableError(exc.problem(source)) from None
        raise UnreadableError(
            TraceProblem(source, exc.message, lines[exc.loc[0]], format_loc(exc.loc[1:]))
        ) from None
    return Trace(source, (source, Path(source).name), read.calls, read.output, turns=read.turns)


class UnreadableError(Exception):
    """A conversation that cannot be read, with where it is."""

    def __init__(self, problem: TraceProblem) -> None:
        super().__init__(str(problem))
        self.problem = problem
