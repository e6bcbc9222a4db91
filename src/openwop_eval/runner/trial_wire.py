"""Finished trials and their grades as plain tuples, for the pipe to a commit process.

Pickling the runner's dataclasses costs more than committing them: frozen slotted ones
(a trial's record, its tool calls) and named tuples pickle through Python-level methods,
and a trial cost some 90 µs across the pipe. Tuples of strings, numbers and JSON values
pickle in C, and each side builds its objects back itself.
"""

from __future__ import annotations

from typing import Any

from ..core import CompiledTask, ToolCall, TrialRecord
from ..core.safety import SafetyPolicy
from .events import Pending
from .tools import RecordedCall
from .trial import Finished, Played, TrialOutcome, TrialSetup, _Invoked

Wire = tuple[Any, ...]


def finished_out(position: int, done: Finished) -> Wire:
    """Trial ``done`` (of the plan's task at ``position``) as a tuple. The agent's reply
    stays here: grading reads only the error kind and the latency."""
    boundary, invoked = done.boundary, done.invoked
    calls = tuple(
        (
            c.tool,
            c.args,
            c.missed,
            c.status,
            c.result,
            c.error,
            c.args_text,
            c.called_at,
            c.returned_at,
            c.duration_ms,
        )
        for c in boundary.calls
    )
    return (
        position,
        done.setup.trial,
        calls,
        boundary.ext,
        boundary.invocation_id,
        (invoked.error, invoked.error_kind, invoked.latency_ms),
        record_out(done.record),
        tuple(done.started),
        done.diagnostics,
        done.ended_at,
    )


def finished_in(
    wire: Wire, tasks: tuple[CompiledTask, ...], agent: Any, safety: SafetyPolicy | None
) -> Finished:
    """The :class:`Finished` of :func:`finished_out`, around a setup of ``agent``."""
    position, trial, calls, ext, invocation_id, invoked, record, started, diagnostics, end = wire
    played = Played(
        [RecordedCall(*call) for call in calls],
        ext,
        invocation_id,
        _Invoked(None, *invoked),
        record_in(record),
        Pending(*started),
        diagnostics,
        end,
    )
    return played.rebuild(TrialSetup(tasks[position], trial, agent, safety=safety))


def record_out(record: TrialRecord) -> Wire:
    return (
        record.task_id,
        record.index,
        record.output,
        tuple((call.tool, call.args, call.missed) for call in record.tool_calls),
        record.error,
        record.cost_usd,
        record.latency_ms,
        record.verdicts,
        record.output_score,
        record.findings,
    )


def record_in(wire: Wire) -> TrialRecord:
    task_id, index, output, calls, *rest = wire
    return TrialRecord(task_id, index, output, tuple(ToolCall(*call) for call in calls), *rest)


def outcome_out(outcome: TrialOutcome, detail: bool) -> Wire:
    """For an observer: the outcome, with its events and diagnostics when ``detail``."""
    events = [tuple(event) for event in outcome.events] if detail else []
    diagnostics = outcome.diagnostics if detail else {}
    return (record_out(outcome.record), outcome.grade, outcome.invocation_id, events, diagnostics)


def outcome_in(wire: Wire) -> TrialOutcome:
    record, grade, invocation_id, events, diagnostics = wire
    pending = [Pending(*event) for event in events]
    return TrialOutcome(record_in(record), grade, invocation_id, pending, diagnostics)
