"""Reading a run back from its event log: trial records, and recorded tool responses.

This is how a run is resumed and how ``verify`` recomputes a verdict: each trial's score is
the recorded fact in its ``eval.scored``; its trajectory is its ``agent.tool-called`` events;
misses and errors come from ``agent.tool-returned`` and ``agent.invocation-completed``.
Events are attributed to a trial by the ``x-openwop-eval`` member; a log without it (another
host's) is read by invocation bracket, which holds when its trials did not interleave.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from ..core import JSON, ToolCall, TrialRecord
from ..core import names as n
from ..core.canonical import is_number
from ..core.safety import MAX_TRIAL_FINDINGS, FindingTag, Severity, finding_problem
from .names import (
    EVAL_SCORED,
    EVAL_STARTED,
    EXT,
    INVOCATION_COMPLETED,
    INVOCATION_STARTED,
    TOOL_CALLED,
    TOOL_RETURNED,
    sequence_of,
    v2_type,
)


@dataclass
class _Call:
    tool: str
    args: JSON
    missed: bool = False
    result: JSON = None
    answered: bool = False


@dataclass
class _Invocation:
    task_id: str | None = None
    trial: int | None = None
    calls: dict[str, _Call] = field(default_factory=dict)  # by callId, in call order
    error: str | None = None
    scored: dict[str, Any] | None = None


@dataclass(frozen=True)
class Replay:
    records: list[TrialRecord]
    recorded_passed: dict[tuple[str, int], bool]
    """Each trial's verdict as its ``eval.scored`` states it, to check against a recompute."""
    responses: dict[tuple[str, int], list[tuple[str, JSON, JSON]]]
    """Per (task, trial): the calls a fixture served or a live tool answered, with results."""
    problems: list[str]
    started: dict[str, Any] | None = None
    """The ``eval.started`` payload: the run's terms (see :mod:`.terms`)."""


def replay(docs: Iterable[dict[str, Any]]) -> Replay:
    invocations: dict[str, _Invocation] = {}
    order: list[str] = []
    open_invocation: str | None = None
    problems: list[str] = []
    seen_trials: defaultdict[str, int] = defaultdict(int)
    started: dict[str, Any] | None = None
    for doc in sorted(docs, key=sequence_of):
        kind = v2_type(str(doc.get("type", "")))
        payload = _object(doc.get("payload"))
        if kind == EVAL_STARTED and started is None:
            started = payload
        ext = _object(payload.get(EXT))
        raw_key = ext.get("invocationId") or payload.get("invocationId") or open_invocation
        key = None if raw_key is None else str(raw_key)
        if kind == INVOCATION_STARTED:
            key = str(payload.get("invocationId") or key)
            open_invocation = key
        if (
            kind
            not in (
                INVOCATION_STARTED,
                TOOL_CALLED,
                TOOL_RETURNED,
                INVOCATION_COMPLETED,
                EVAL_SCORED,
            )
            or key is None
        ):
            continue
        if key not in invocations:
            invocations[key] = _Invocation()
            order.append(key)
        inv = invocations[key]
        if "taskId" in ext:
            trial = _index(ext.get("trial", 0))
            if trial is None:
                problems.append(f"event {doc.get('sequence')!r}: its trial is not an index")
                continue
            inv.task_id, inv.trial = str(ext["taskId"]), trial
        _apply(kind, payload, ext, inv)
        if kind == EVAL_SCORED:
            if inv.task_id is None:
                inv.task_id = str(payload.get("taskId"))
            if inv.trial is None:
                inv.trial = seen_trials[inv.task_id]
            seen_trials[inv.task_id] += 1
            open_invocation = None

    records, passed, responses = [], {}, {}
    for key in order:
        inv = invocations[key]
        if inv.scored is None or inv.task_id is None or inv.trial is None:
            continue  # a trial that never finished counts as not run
        index = (inv.task_id, inv.trial)
        if index in passed:
            problems.append(f"task {inv.task_id!r} trial {inv.trial} is scored more than once")
            continue
        records.append(_record(inv, problems))
        passed[index] = inv.scored.get("passed") is True
        responses[index] = [(c.tool, c.args, c.result) for c in inv.calls.values() if c.answered]
    return Replay(records, passed, responses, problems, started)


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _apply(kind: str, payload: dict[str, Any], ext: dict[str, Any], inv: _Invocation) -> None:
    call_id = str(payload.get("callId", len(inv.calls)))
    if kind == TOOL_CALLED:
        inputs = payload.get("inputs")
        inv.calls[call_id] = _Call(str(payload.get("toolName")), {} if inputs is None else inputs)
    elif kind == TOOL_RETURNED and call_id in inv.calls:
        call = inv.calls[call_id]
        call.missed = ext.get("miss") is True
        call.result = payload.get("outcome")
        call.answered = payload.get("status", "ok") == "ok"
    elif kind == INVOCATION_COMPLETED and payload.get("outcome") == "failed":
        if ext.get("error") != "fixture-miss":  # a miss that propagated is the miss, not an error
            inv.error = str(ext.get("error", "failed"))
    elif kind == EVAL_SCORED:
        inv.scored = payload


def _index(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


def _measure(scored: dict[str, Any], key: str, where: str, problems: list[str]) -> Any:
    """A recorded cost, latency or score: a finite number ≥ 0, or None (with a problem)."""
    value = scored.get(key)
    if value is None or (is_number(value) and math.isfinite(value) and value >= 0):
        return value
    problems.append(f"{where}: {key} {value!r} is not a finite number ≥ 0; it is ignored")
    return None


def _record(inv: _Invocation, problems: list[str]) -> TrialRecord:
    scored = inv.scored or {}
    where = f"eval.scored for task {inv.task_id!r} trial {inv.trial}"
    score = _measure(scored, "score", where, problems)
    if score is not None and score > 1:
        problems.append(f"{where}: score {score!r} is above 1; it counts as 0")
        score = None
    return TrialRecord(
        task_id=str(inv.task_id),
        index=int(inv.trial or 0),
        tool_calls=tuple(ToolCall(c.tool, c.args, c.missed) for c in inv.calls.values()),
        error=inv.error,
        cost_usd=_measure(scored, "costUsd", where, problems),
        latency_ms=_measure(scored, "latencyMs", where, problems),
        output_score=float(score) if score is not None else 0.0,
        findings=_findings(_object(scored.get(EXT)).get(n.EXT_FINDINGS), where, problems),
    )


def _findings(value: Any, where: str, problems: list[str]) -> tuple[FindingTag, ...]:
    """A trial's recorded findings; a malformed one is a problem and is left out."""
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_TRIAL_FINDINGS:
        problems.append(f"{where}: its findings are not a list of at most {MAX_TRIAL_FINDINGS}")
        return ()
    tags = []
    for item in value:
        kind, severity = _object(item).get("kind"), _object(item).get("severity")
        problem = finding_problem(kind, severity)
        if problem is not None:
            problems.append(f"{where}: a finding is left out: {problem}")
            continue
        tags.append(FindingTag(str(kind), cast(Severity, severity)))
    return tuple(tags)
