"""Which trial of which task a trace records, and the ``--map`` file for traces that do not say.

A trace names its task and trial itself — a record's ``taskId`` and ``trial``, the
``openwop.eval.task_id`` and ``openwop.eval.trial`` attributes of a span or its resource,
an Inspect sample's id and epoch — or a map file (:mod:`openwop_eval.files.maps`, the format
``run --tool-map`` reads too) names them by the trace's key:

    {"traces": {"<trace id | sample id | record id | file>": {"taskId": "refund", "trial": 0}},
     "tools": {"crm_lookup": "crm:lookup"}}

A map entry wins over what the trace says; an entry without ``trial`` keeps the trace's
(Inspect: its epoch), else trial 0. ``tools`` renames tools as the traces spell them to the
suite's names (OpenAI function names cannot hold ``:``). Trials count from 0. Traces of one
session that record the same trial are one conversation (:mod:`.sessions`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from ..files.maps import MapFile, read_map
from .records import Trace, TraceProblem, TraceRecord
from .sessions import inherit_trials, joined, same_session

TraceMap = MapFile
"""The map file (:mod:`openwop_eval.files.maps`): one format for ``grade`` and ``run``."""


def load_map(path: str) -> tuple[TraceMap, list[TraceProblem]]:
    """The map file (JSON or YAML); its problems located by line and JSON path."""
    found, problems = read_map(path)
    return found, [TraceProblem.of(path, p) for p in problems]


@dataclass(frozen=True)
class Trials:
    """What the suite runs: its task ids and the trials of each."""

    task_ids: Collection[str]
    count: int


def settle(
    traces: Sequence[Trace], trace_map: TraceMap, trials: Trials
) -> tuple[list[TraceRecord], list[TraceProblem]]:
    """Each trace as the trial it records; a trace naming no task, a task or trial the suite
    does not run, or a trial recorded twice (but by parts of one session) is a problem."""
    held: dict[tuple[str, int], list[Trace]] = {}
    problems: list[TraceProblem] = []
    for trace in inherit_trials(traces):
        entry = next((trace_map.traces[k] for k in trace.keys if k in trace_map.traces), None)
        task_id = entry.task_id if entry is not None else trace.task_id
        trial = entry.trial if entry is not None and entry.trial is not None else trace.trial
        trial = 0 if trial is None else trial
        why = _unrunnable(trace, task_id, trial, trials)
        parts = held.get((task_id, trial), []) if task_id is not None else []
        if why is None and parts and not same_session(parts[0], trace):
            first = parts[0].source
            why = f"a second trace for task {task_id!r} trial {trial} (the first: {first})"
        if why is not None:
            problems.append(TraceProblem(trace.source, why))
            continue
        assert task_id is not None
        held.setdefault((task_id, trial), []).append(trace)
    records = [
        _record(joined(parts), task_id, trial, trace_map.tools)
        for (task_id, trial), parts in held.items()
    ]
    return records, problems


def _unrunnable(trace: Trace, task_id: str | None, trial: int, trials: Trials) -> str | None:
    if task_id is None:
        mapped = f", or give {trace.keys[0]!r} an entry in --map" if trace.keys else ""
        return f"the trace names no task: record its taskId and trial{mapped}"
    if task_id not in trials.task_ids:
        return f"task {task_id!r} is not in the suite"
    if trial >= trials.count:
        return (
            f"trial {trial} of task {task_id!r} is past the suite's {trials.count} trial(s)"
            " (trials count from 0)"
        )
    return None


def _record(trace: Trace, task_id: str, trial: int, tools: dict[str, str]) -> TraceRecord:
    calls = tuple(replace(c, tool=tools.get(c.tool, c.tool)) for c in trace.calls)
    return TraceRecord(
        task_id,
        trial,
        trace.output,
        calls,
        trace.cost_usd,
        trace.latency_ms,
        trace.error,
        trace.source,
        trace.turns,
    )
