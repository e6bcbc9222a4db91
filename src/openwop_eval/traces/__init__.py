"""Grading recorded runs: trace readers, and the replay agent that turns traces into a run.

Readers, one module per format — OpenAI chat messages (:mod:`.chat`), Responses items
(:mod:`.responses`), OTLP/JSON spans (:mod:`.otlp`, :mod:`.spans`), Inspect AI logs
(:mod:`.inspect_log`) — yield :class:`Trace` values; :mod:`.mapping` settles the (task,
trial) each records; :class:`TraceAgent`, :class:`TraceUsers` (a conversation's user, as
recorded) and :func:`recording_of` make them a run, which the run service grades like any
other (``openwop-eval grade``; ``docs/traces.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..core import Suite
from .agent import (
    AGENT_ID,
    MissingTraceError,
    TraceAgent,
    TraceUsers,
    UnansweredTurnError,
    missing_trials,
    recording_of,
)
from .files import read_trace_file, read_trace_files
from .mapping import TraceMap, Trials, load_map, settle
from .records import Trace, TraceCall, TraceProblem, TraceRecord, TraceTurn


@dataclass(frozen=True)
class LoadedTraces:
    """Every recorded trial of a suite, or why the traces cannot be graded."""

    records: list[TraceRecord] = field(default_factory=list)
    problems: list[TraceProblem] = field(default_factory=list)
    missing: list[tuple[str, int]] = field(default_factory=list)
    """The suite's trials no trace records: they error (and fail) when graded."""


def load_traces(paths: Sequence[str], suite: Suite, map_path: str | None = None) -> LoadedTraces:
    """Read every trace file and settle the trial of each; any problem means nothing may be
    graded (the caller exits 2)."""
    trace_map, problems = load_map(map_path) if map_path else (TraceMap(), [])
    traces, unreadable = read_trace_files(paths)
    problems += unreadable
    trials = Trials([t.task_id for t in suite.tasks], suite.trials_or_default.count)
    records, unsettled = settle(traces, trace_map, trials)
    problems += unsettled
    if problems:
        return LoadedTraces(problems=problems)
    missing = missing_trials(records, trials.task_ids, trials.count)
    return LoadedTraces(records, [], missing)


__all__ = [
    "AGENT_ID",
    "LoadedTraces",
    "MissingTraceError",
    "Trace",
    "TraceAgent",
    "TraceCall",
    "TraceMap",
    "TraceProblem",
    "TraceRecord",
    "TraceTurn",
    "TraceUsers",
    "UnansweredTurnError",
    "load_map",
    "load_traces",
    "missing_trials",
    "read_trace_file",
    "read_trace_files",
    "recording_of",
    "settle",
]
