"""Recorded traces as a run: a replay agent, and the recording its tool calls are served from.

Grading traces is running the suite with an agent that replays them: trial *t* of task *T*
makes the trace's tool calls in order through the tool boundary — so fixtures, the event
log and the trajectory check see them exactly as they would a live agent's — and answers
the trace's output. The boundary serves exactly the trace's results (a recording, matched by
tool and canonical arguments), so a replay can never reach a live tool. A trial the traces
do not hold errors ("no trace for this trial"): it scores 0 and fails, as a trial that did
not run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..agents.base import AgentReply, ToolPort, TrialContext
from ..agents.scripted import play_back
from ..core.records import Recording
from .records import TraceRecord

AGENT_ID = "openwop-eval.traces"


class MissingTraceError(LookupError):
    """The traces hold no record of this trial."""


class TraceAgent:
    """Replays one recorded trace per (task, trial)."""

    def __init__(self, records: Iterable[TraceRecord], agent_id: str = AGENT_ID) -> None:
        self.records = {(r.task_id, r.trial): r for r in records}
        self.agent_id = agent_id

    async def run(self, context: TrialContext, port: ToolPort) -> AgentReply:
        record = self.records.get((context.task_id, context.trial))
        if record is None:
            raise MissingTraceError(
                f"no trace for this trial (task {context.task_id!r}, trial {context.trial})"
            )
        reply = AgentReply(record.output, record.cost_usd, record.latency_ms)
        return await play_back(port, ((c.tool, c.args) for c in record.calls), reply, record.error)


def recording_of(records: Iterable[TraceRecord], count: int) -> Recording:
    """The traces' tool results as a run's recording:
    per task, per trial, (tool, args, result) of every call, each served once.

    Every trial 0..count−1 of a recorded task is present — a trial without a trace as
    answering nothing — because a recording serves trial *i* the *i*-th recorded trial
    modulo their number, which must be trial *i* itself."""
    recording: dict[str, dict[int, list[tuple[str, Any, Any]]]] = {}
    for record in records:
        calls = [(c.tool, c.args, c.served) for c in record.calls]
        recording.setdefault(record.task_id, {})[record.trial] = calls
    for trials in recording.values():
        for index in range(count):
            trials.setdefault(index, [])
    return recording


def missing_trials(
    records: Iterable[TraceRecord], task_ids: Iterable[str], count: int
) -> list[tuple[str, int]]:
    """The (task, trial) pairs of the suite that no trace records, in suite order."""
    held: Mapping[tuple[str, int], Any] = {(r.task_id, r.trial): r for r in records}
    return [(t, i) for t in task_ids for i in range(count) if (t, i) not in held]
