"""When each trial and each of its tool calls began and ended, read from the event log.

The grading reader (:mod:`openwop_eval.log.reader`) keeps what a verdict needs; spans also
need the events' timestamps, the call ids and how each call ended. This keeps those per
trial, attributed the way the reader attributes events (the ``x-openwop-eval`` member's
invocation, else the ``agent.invocation-started`` bracket), until the trial's
``eval.scored`` is read: memory is bounded by the trials in flight, not by the log.

A call's arguments and result are kept only when content is captured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..base.limits import MAX_OPEN_TRIALS
from ..core import JSON
from ..core import names as n
from ..log.event_names import (
    EVAL_SCORED,
    EXT,
    INVOCATION_COMPLETED,
    INVOCATION_STARTED,
    TOOL_CALLED,
    TOOL_RETURNED,
    v2_type,
)

_TRIAL_KINDS = frozenset(
    {INVOCATION_STARTED, TOOL_CALLED, TOOL_RETURNED, INVOCATION_COMPLETED, EVAL_SCORED}
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(slots=True)
class CallTiming:
    """One tool call as its ``agent.tool-called`` and ``agent.tool-returned`` state it."""

    call_id: str
    tool: str
    start: int | None
    turn: int | None = None
    end: int | None = None
    returned: bool = False
    error_code: str | None = None
    """``None`` unless the call ended in an error: the error's code (content-free)."""
    missed: bool = False
    arguments: JSON = None
    result: JSON = None


@dataclass(slots=True)
class TrialTiming:
    """One trial's invocation: its agent, its bracket's timestamps, its calls in order."""

    invocation_id: str
    agent_id: str | None = None
    start: int | None = None
    end: int | None = None
    scored: int | None = None
    calls: dict[str, CallTiming] = field(default_factory=dict)


def nanos(value: Any) -> int | None:
    """An event's ISO 8601 timestamp in nanoseconds since the epoch (UTC when it names no
    zone); None when it is not one."""
    if type(value) is not str:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


class Timings:
    """Feed it every event in sequence order; :meth:`feed` says which trial an event is of,
    and :meth:`pop` hands a scored trial's timings over."""

    def __init__(self, content: bool) -> None:
        self._content = content
        self._open: dict[str, TrialTiming] = {}
        self._bracket: str | None = None

    def feed(self, doc: dict[str, Any], at: int | None) -> str | None:
        """Note a trial event at ``at``; returns its invocation key (None for run events)."""
        raw = doc.get("type")
        kind = v2_type(raw) if type(raw) is str else None
        if kind not in _TRIAL_KINDS:
            return None
        payload = _object(doc.get("payload"))
        ext = _object(payload.get(EXT))
        raw_key = ext.get("invocationId") or payload.get("invocationId") or self._bracket
        if kind == INVOCATION_STARTED:
            raw_key = payload.get("invocationId") or raw_key
            self._bracket = None if raw_key is None else str(raw_key)
        if raw_key is None:
            return None
        key = str(raw_key)
        trial = self._trial(key)
        _note(kind, payload, ext, at, trial, self._content)
        if kind == EVAL_SCORED:
            self._bracket = None
        return key

    def pop(self, key: str | None) -> TrialTiming:
        """A scored trial's timings (empty ones when its events were not attributable)."""
        found = self._open.pop(key, None) if key is not None else None
        return found or TrialTiming(key or "")

    def _trial(self, key: str) -> TrialTiming:
        trial = self._open.get(key)
        if trial is None:
            if len(self._open) >= MAX_OPEN_TRIALS:  # as the reader does: the oldest goes
                del self._open[next(iter(self._open))]
            trial = self._open[key] = TrialTiming(key)
        return trial


def _note(
    kind: str,
    payload: dict[str, Any],
    ext: dict[str, Any],
    at: int | None,
    trial: TrialTiming,
    content: bool,
) -> None:
    call_id = str(payload.get("callId", len(trial.calls)))
    if kind == INVOCATION_STARTED:
        trial.start = at
        agent = payload.get("agentId")
        trial.agent_id = agent if type(agent) is str and agent else None
    elif kind == TOOL_CALLED:
        turn = ext.get(n.TURN)
        call = CallTiming(call_id, str(payload.get("toolName")), at)
        call.turn = turn if type(turn) is int and turn >= 0 else None
        call.arguments = payload.get("inputs") if content else None
        trial.calls[call_id] = call
    elif kind == TOOL_RETURNED and call_id in trial.calls:
        _returned(trial.calls[call_id], payload, ext, at, content)
    elif kind == INVOCATION_COMPLETED:
        trial.end = at
    elif kind == EVAL_SCORED:
        trial.scored = at


def _returned(
    call: CallTiming, payload: dict[str, Any], ext: dict[str, Any], at: int | None, content: bool
) -> None:
    call.end, call.returned = at, True
    call.missed = ext.get("miss") is True
    if payload.get("status", "ok") != "ok":
        code = _object(payload.get("error")).get("code")
        call.error_code = code if type(code) is str and code else "error"
    call.result = payload.get("outcome") if content else None


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
