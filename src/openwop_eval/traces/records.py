"""What every trace reader yields: one trace per (task, trial), its tool calls and its answer.

A reader turns a file into :class:`Trace` values, each carrying the task and trial it names
(if any) and the key a ``--map`` file may name it by; :mod:`.mapping` settles the task and
trial, and the result is a :class:`TraceRecord`, which the replay agent replays. A trace of
a conversation also says its agent turns (:class:`TraceTurn`) and the turn of each call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..agents.openai_messages import RAW_ARGUMENTS
from ..core import JSON
from ..core.problems import Loc, Problem, format_loc
from ..files.documents import check_values, parse_document


@dataclass(frozen=True, slots=True)
class TraceCall:
    """One tool call of a trace: what was called with what, and what came back."""

    tool: str
    args: dict[str, JSON]
    result: JSON = None
    error: str | None = None
    """The tool failed (an error status, an error event): it is served ``{"error": ...}``."""
    turn: int = 0
    """The agent turn it was made in (0-based), when the trace is graded as a conversation."""

    @property
    def served(self) -> JSON:
        """What the tool boundary answers this call with when the trace is replayed."""
        return self.result if self.error is None else {"error": self.error}


@dataclass(frozen=True, slots=True)
class TraceTurn:
    """One agent turn of a recorded conversation: the user's message it answers, its reply."""

    user: str | None = None
    """The user's message as text, within the user message limit (None: not recorded)."""
    output: JSON = None
    """The agent's reply: its last message's text when no call came after it, else null."""
    answered: bool = True
    """False for a last turn whose user message the trace never answers."""


@dataclass(frozen=True, slots=True)
class Trace:
    """One trace as read, before the task and trial are settled."""

    source: str
    """Where it was read: ``FILE``, ``FILE:LINE``, ``FILE trace ID`` — for problems."""
    keys: tuple[str, ...]
    """What a ``--map`` file may name it by: a trace id, a sample id, a record id, a file
    (as given, or its name)."""
    calls: tuple[TraceCall, ...]
    output: JSON = None
    task_id: str | None = None
    trial: int | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None
    error: str | None = None
    """The agent failed in the recorded run: the trial errors, as a scripted ``error``."""
    turns: tuple[TraceTurn, ...] = ()
    """Its agent turns, in order (empty: one turn, the whole trace)."""
    session: str | None = None
    """The conversation it is part of (a span's ``session.id``/``gen_ai.conversation.id``):
    the traces of one session recording one trial are one conversation."""
    start: int = 0
    """When it started (Unix ns, 0 unknown): the order of a session's traces."""


@dataclass(frozen=True, slots=True)
class Exchange:
    """What a conversation's messages or items hold: the calls, the answer, the turns."""

    calls: tuple[TraceCall, ...]
    output: JSON
    """The answer as a one-reply trial reads it (the last assistant text after the last call)."""
    turns: tuple[TraceTurn, ...]


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """A recorded trial, ready to grade: the replay of trial ``trial`` of ``task_id``."""

    task_id: str
    trial: int
    output: JSON
    calls: tuple[TraceCall, ...] = ()
    cost_usd: float | None = None
    latency_ms: float | None = None
    error: str | None = None
    source: str = ""
    turns: tuple[TraceTurn, ...] = ()
    """The agent turns, when the trace is graded as a conversation (empty: one turn)."""

    @property
    def conversation(self) -> tuple[TraceTurn, ...]:
        """Its agent turns: at least one (a trace that says none is one turn, its output)."""
        return self.turns or (TraceTurn(None, self.output),)


@dataclass(frozen=True, slots=True)
class TraceProblem:
    """Why traces cannot be graded, located in the file (line, JSON path or span)."""

    source: str
    message: str
    line: int | None = None
    where: str = ""
    """A JSON path (``$.messages[2]``) or a span (``span 5f0c…``) inside the line."""

    @classmethod
    def of(cls, source: str, problem: Problem, line: int | None = None) -> TraceProblem:
        """A document's problem (see :mod:`openwop_eval.files.documents`), in ``source``."""
        where = problem.path if problem.loc else ""
        return cls(source, problem.message, problem.line if line is None else line, where)

    def __str__(self) -> str:
        at = f"{self.source}:{self.line}" if self.line is not None else self.source
        return f"{at}{' ' + self.where if self.where else ''}: {self.message}"


class TraceError(ValueError):
    """A trace that cannot be read; the readers turn it into a located problem."""

    def __init__(self, message: str, loc: Loc = ()) -> None:
        super().__init__(message)
        self.message, self.loc = message, loc

    def problem(self, source: str, line: int | None = None, prefix: Loc = ()) -> TraceProblem:
        loc = (*prefix, *self.loc)
        return TraceProblem(source, self.message, line, format_loc(loc) if loc else "")


def parse_arguments(value: Any) -> dict[str, JSON]:
    """Tool arguments as recorded: an object as is; JSON text of an object decoded; anything
    else (malformed JSON, a non-object, values no run can carry) kept raw as
    ``{"$raw": text}``, as the ``openai:`` agent records them — a step that names argument
    keys fails on it, and the report shows what the agent sent."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return {}  # no arguments at all (an empty string is how some SDKs send none)
    if isinstance(value, str):
        doc, _, problems = parse_document(value, ".json")
        return doc if not problems and isinstance(doc, dict) else {RAW_ARGUMENTS: value}
    if check_values(value):
        return {RAW_ARGUMENTS: _short(repr(value))}
    return value if isinstance(value, dict) else {RAW_ARGUMENTS: value}


def parse_result(value: Any) -> JSON:
    """A tool result: JSON text decoded when it is JSON data, else the value itself."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "[", '"'):
        doc, _, problems = parse_document(value, ".json")
        return value if problems else doc
    return value if not check_values(value) else _short(repr(value))


def _short(text: str) -> str:
    return text if len(text) <= 10_000 else text[:10_000] + "…"


def text_of(content: Any) -> str | None:
    """The text of message content: a string, or the ``text`` of its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            part.get("text") if "text" in part else part.get("content")
            for part in content
            if isinstance(part, dict)
            and part.get("type") in ("text", "output_text", "input_text", None)
        ]
        found = [t for t in texts if isinstance(t, str)]
        return "".join(found) if found else None
    return None
