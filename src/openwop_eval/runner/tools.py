"""The tool boundary: every call an agent makes passes here, is recorded, and is answered
from the task's fixtures, a recording, or a live tool — or is a miss that fails the trial.

When fixtures are in force (``toolResponses``, or a recorded run) a call they cannot answer
is a miss: it is never passed on to a live tool, so a replay can never quietly go live.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import time
from collections import defaultdict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agents.base import TRANSPORTS, AgentProtocolError, ToolCallError, ToolMissError
from ..agents.python import load_module_file
from ..base import jsontext
from ..base.errors import InfrastructureError, unreachable
from ..base.limits import (
    MAX_ERROR_CHARS,
    MAX_TOOL_ARGS_CHARS,
    MAX_TOOL_RESULT_CHARS,
    MAX_TRIAL_CONTENT_CHARS,
)
from ..core import JSON, ToolCall, canonical_json
from ..core.names import TURN
from ..log.event_names import EXT, MESSAGE, TOOL_CALLED, TOOL_RETURNED, trial_ext
from ..runtime.clock import utc_stamp
from .events import Pending
from .spec import LiveTool as LiveTool


class ContentTooLargeError(AgentProtocolError):
    """What an agent sent, or a live tool answered, is over a limit of :mod:`..limits`.

    Raised to the agent, which may catch it; the trial errors with :attr:`kind` whatever the
    agent does next (:attr:`ToolBoundary.breach`), and the content is never recorded."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def cut(text: str) -> str:
    """An exception's text as a trial keeps it: at most ``MAX_ERROR_CHARS`` characters."""
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


_SCALARS = frozenset({str, int, float, bool, type(None)})
"""Argument values a call's shallow copy already keeps as they were."""


@dataclass
class FixtureBook:
    """The fixture answers of one trial, consumed as the trial calls (fresh per trial)."""

    by_tool: dict[str, deque[JSON]] = field(default_factory=dict)
    by_call: dict[tuple[str, str], deque[JSON]] = field(default_factory=dict)
    sorted_names: tuple[str, ...] | None = None
    """The tools it answers, sorted, when known in advance (a :class:`FixtureSheet`'s)."""
    listing: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """What a recording's MCP servers listed of their tools (:mod:`.fixtures`)."""

    @classmethod
    def from_responses(cls, responses: Sequence[tuple[str, JSON]]) -> FixtureBook:
        return FixtureSheet.of(responses).deal()

    @classmethod
    def from_recording(cls, calls: Sequence[tuple[str, JSON, JSON]]) -> FixtureBook:
        by_call: dict[tuple[str, str], deque[JSON]] = defaultdict(deque)
        for tool, args, result in calls:
            by_call[(tool, canonical_json(args))].append(result)
        return cls(by_call=dict(by_call))

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The tools it answers, sorted."""
        if self.sorted_names is not None:
            return self.sorted_names
        return tuple(sorted({*self.by_tool, *(tool for tool, _ in self.by_call)}))

    def take(self, tool: str, args: JSON) -> tuple[bool, JSON]:
        """The next answer to the call, as the fixtures hold it: never hand it to an agent
        (the boundary gives the agent a copy and records this one)."""
        queue = self.by_tool.get(tool) or self.by_call.get((tool, canonical_json(args)))
        if not queue:
            return False, None
        return True, queue.popleft()


@dataclass(frozen=True)
class FixtureSheet:
    """A task's ``toolResponses`` grouped by tool once, in order: each trial is dealt a
    fresh :class:`FixtureBook` from it (a run deals thousands a second)."""

    groups: tuple[tuple[str, tuple[JSON, ...]], ...]
    names: tuple[str, ...]

    @classmethod
    def of(cls, responses: Sequence[tuple[str, JSON]]) -> FixtureSheet:
        by_tool: dict[str, list[JSON]] = defaultdict(list)
        for tool, response in responses:
            by_tool[tool].append(response)
        groups = tuple((tool, tuple(answers)) for tool, answers in by_tool.items())
        return cls(groups, tuple(sorted(by_tool)))

    def deal(self) -> FixtureBook:
        by_tool = {tool: deque(answers) for tool, answers in self.groups}
        return FixtureBook(by_tool=by_tool, sorted_names=self.names)


def load_live_tools(spec: str) -> dict[str, LiveTool]:
    """``package.module`` or ``path/to/tools.py`` exposing ``TOOLS = {"scope:tool": fn}``."""
    module = load_module_file(Path(spec)) if spec.endswith(".py") else importlib.import_module(spec)
    tools = getattr(module, "TOOLS", None)
    if not isinstance(tools, Mapping) or not all(
        isinstance(k, str) and callable(v) for k, v in tools.items()
    ):
        raise ValueError(f"{spec} must define TOOLS = {{'scope:tool': callable, ...}}")
    return dict(tools)


@dataclass
class RecordedCall:
    """What the boundary saw of one call, for the trial record and the report, and when:
    its two events are built from it when the trial is committed (:meth:`ToolBoundary.events`),
    off the event loop."""

    tool: str
    args: JSON
    missed: bool = False
    status: str = "ok"
    result: JSON = None
    error: str | None = None
    args_text: str = ""
    """The arguments' canonical text (what ``argsHash`` hashes)."""
    called_at: str = ""
    returned_at: str = ""
    duration_ms: int = 0
    turn: int | None = None
    """A conversation: the agent turn it was made in."""
    transport: str | None = None
    """How the agent called it (``agent.tool-called``'s ``transport``), when known."""

    def as_dict(self) -> dict[str, JSON]:
        """For the trial's diagnostics (by hand: ``dataclasses.asdict`` deep-copies)."""
        out: dict[str, JSON] = {
            "tool": self.tool,
            "args": self.args,
            "missed": self.missed,
            "status": self.status,
            "result": self.result,
            "error": self.error,
        }
        if self.turn is not None:
            out[TURN] = self.turn
        return out


@dataclass(frozen=True)
class RecordedMessage:
    """A conversation's message: a user turn, or the agent's reply to one."""

    turn: int
    role: str
    content: JSON
    at: str
    calls_before: int
    """How many calls the trial had made when it was said: its place among their events."""


class ToolBoundary:
    """One trial's tool port. Closed when the trial ends: late calls are refused."""

    def __init__(
        self,
        *,
        agent_id: str,
        task_id: str,
        trial: int,
        invocation_id: str,
        fixtures: FixtureBook | None,
        live: Mapping[str, LiveTool] | None,
    ) -> None:
        self.agent_id = agent_id
        self.ext = trial_ext(task_id, trial, invocation_id)
        self.invocation_id = invocation_id
        self.fixtures = fixtures
        self.live = live or {}
        self.calls: list[RecordedCall] = []
        self.closed = False
        self.content = 0
        """Characters of canonical JSON the trial has recorded so far (arguments, live
        results, the output), against ``MAX_TRIAL_CONTENT_CHARS``."""
        self.breach: ContentTooLargeError | None = None
        """The first limit the trial went over: it errors with it, whatever follows."""
        self.unreachable: InfrastructureError | None = None
        """The first live tool whose server could not be reached (an MCP upstream, after its
        retries): the trial errors on infrastructure, whatever the agent made of it."""
        self.turn: int | None = None
        """A conversation: the agent turn now being played; its calls are attributed to it."""
        self.messages: list[RecordedMessage] = []

    def admit(self, size: int, limit: int, kind: str, what: str) -> None:
        """Count ``size`` characters of ``what`` into the trial, or refuse them (and the
        trial) when they are over ``limit`` or take the trial over its total."""
        if size > limit:
            raise self._refuse(kind, f"{what} is {size} characters of JSON; the limit is {limit}")
        if self.content + size > MAX_TRIAL_CONTENT_CHARS:
            raise self._refuse(
                "trial-content-too-large",
                f"the trial's content would pass its limit of {MAX_TRIAL_CONTENT_CHARS} characters",
            )
        self.content += size

    def _refuse(self, kind: str, message: str) -> ContentTooLargeError:
        error = ContentTooLargeError(kind, message)
        if self.breach is None:
            self.breach = error
        return error

    @property
    def tool_names(self) -> tuple[str, ...]:
        if self.fixtures is not None:
            return self.fixtures.tool_names
        return tuple(sorted(self.live))

    @property
    def listing(self) -> Mapping[str, Mapping[str, Any]]:
        """What MCP servers list of the trial's tools: the recording's when fixtures answer,
        else what live tools list of themselves (an MCP upstream's tools carry a ``listing``)."""
        if self.fixtures is not None:
            return self.fixtures.listing
        return {
            tool: listing
            for tool, fn in self.live.items()
            if isinstance(listing := getattr(fn, "listing", None), Mapping)
        }

    def trajectory(self) -> tuple[ToolCall, ...]:
        return tuple(ToolCall(c.tool, c.args, c.missed, c.turn or 0) for c in self.calls)

    def say(self, turn: int, role: str, content: JSON) -> None:
        """Record a conversation's message (its event comes with the trial's calls')."""
        self.messages.append(RecordedMessage(turn, role, content, utc_stamp(), len(self.calls)))

    async def call(
        self, tool: str, args: Mapping[str, JSON] | None, transport: str | None = None
    ) -> JSON:
        if self.closed:
            raise AgentProtocolError("a tool was called after the trial had ended")
        if not isinstance(tool, str) or not tool:
            raise AgentProtocolError("a tool name must be a non-empty string")
        arguments = dict(args or {})
        try:
            text = canonical_json(arguments)
        except Exception as exc:  # the encoder rejects any non-JSON value
            raise AgentProtocolError(f"arguments of {tool} are not JSON: {cut(str(exc))}") from exc
        # Refused before anything of it is kept: over the limit, the call is not recorded.
        self.admit(len(tool) + len(text), MAX_TOOL_ARGS_CHARS, "tool-arguments-too-large", "a call")
        if not all(type(value) in _SCALARS for value in arguments.values()):
            arguments = jsontext.copy(arguments)  # as called: the agent may reuse its objects
        record = RecordedCall(
            tool,
            arguments,
            args_text=text,
            called_at=utc_stamp(),
            turn=self.turn,
            transport=transport if transport in TRANSPORTS else None,
        )
        self.calls.append(record)
        started = time.monotonic()
        try:
            return await self._answer(tool, arguments, record)
        finally:
            record.duration_ms = int((time.monotonic() - started) * 1000)
            record.returned_at = utc_stamp()

    def events(self) -> list[Pending]:
        """``agent.tool-called`` and ``agent.tool-returned`` of each call, in call order, and
        a conversation's ``agent.message`` events where they were said (built from the
        records when the trial is committed, not while the agent runs)."""
        if not self.messages:
            return [event for n, call in enumerate(self.calls, 1) for event in self._pair(call, n)]
        events: list[Pending] = []
        said = iter(self.messages)
        message = next(said, None)
        for n, call in enumerate(self.calls, 1):
            while message is not None and message.calls_before < n:
                events.append(self._message(message))
                message = next(said, None)
            events.extend(self._pair(call, n))
        while message is not None:
            events.append(self._message(message))
            message = next(said, None)
        return events

    def _message(self, message: RecordedMessage) -> Pending:
        ext = {EXT: {**self.ext[EXT], TURN: message.turn}}
        payload = {"agentId": self.agent_id, "role": message.role, "content": message.content}
        return Pending(MESSAGE, {**payload, **ext}, message.at)

    def _pair(self, record: RecordedCall, n: int) -> tuple[Pending, Pending]:
        call_id = f"{self.invocation_id}.c{n}"
        called = {
            "agentId": self.agent_id,
            "toolName": record.tool,
            "callId": call_id,
            "inputs": record.args,
            "argsHash": hashlib.sha256(record.args_text.encode()).hexdigest(),
            **({"transport": record.transport} if record.transport else {}),
            **self._ext_of(record),
        }
        returned: dict[str, Any] = {
            "agentId": self.agent_id,
            "toolName": record.tool,
            "callId": call_id,
            "status": record.status,
            "durationMs": record.duration_ms,
        }
        if record.status == "ok":
            returned["outcome"] = record.result
        else:
            code = "fixture_miss" if record.missed else "tool_error"
            returned["error"] = {"code": code, "message": record.error or code}
        returned[EXT] = {**self._ext_of(record)[EXT], **({"miss": True} if record.missed else {})}
        return (
            Pending(TOOL_CALLED, called, record.called_at),
            Pending(TOOL_RETURNED, returned, record.returned_at),
        )

    def _ext_of(self, record: RecordedCall) -> dict[str, Any]:
        if record.turn is None:
            return self.ext
        return {EXT: {**self.ext[EXT], TURN: record.turn}}

    async def _answer(self, tool: str, args: dict[str, Any], record: RecordedCall) -> JSON:
        if self.fixtures is not None:
            found, response = self.fixtures.take(tool, args)
            if found:  # recorded as served, whatever the agent does with its copy
                record.result = response
                return jsontext.copy(response)
            return self._miss(tool, record, "the fixtures have no (further) response")
        fn = self.live.get(tool)
        if fn is None:
            return self._miss(tool, record, "no fixture or live tool can answer it")
        try:
            result = fn(jsontext.copy(args))  # its own: what it changes is not the record
            if inspect.isawaitable(result):
                result = await result
            size = len(canonical_json(result))
        except Exception as exc:
            record.status, record.error = "error", cut(f"{type(exc).__name__}: {exc}")
            self.unreachable = self.unreachable or unreachable(exc)
            raise ToolCallError(f"{tool} failed: {record.error}") from exc
        try:
            self.admit(size, MAX_TOOL_RESULT_CHARS, "tool-result-too-large", "a tool's result")
        except ContentTooLargeError as exc:  # the call stays, failed; its result is dropped
            record.status, record.error = "error", str(exc)
            raise
        record.result = jsontext.copy(result)  # as it answered, whatever the tool keeps doing
        return jsontext.copy(result)

    def _miss(self, tool: str, record: RecordedCall, why: str) -> JSON:
        record.missed, record.status, record.error = True, "error", f"fixture miss: {why}"
        raise ToolMissError(f"call to {tool} missed: {why} (onMiss: fail)")
