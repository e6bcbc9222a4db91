"""Recorded traces as a run: a replay agent, and the recording its tool calls are served from.

Grading traces is running the suite with an agent that replays them: trial *t* of task *T*
makes the trace's tool calls in order through the tool boundary — so fixtures, the event
log and the trajectory check see them exactly as they would a live agent's — and answers
the trace's output. The boundary serves exactly the trace's results (a recording, matched by
tool and canonical arguments), so a replay can never reach a live tool. A trial the traces
do not hold errors ("no trace for this trial"): it scores 0 and fails, as a trial that did
not run.

A conversation task's trial is the conversation the trace records: the runner plays it turn
by turn (``runner/conversation.py``), the replay answering turn *k* with the calls and the
reply of the trace's turn *k*, and :class:`TraceUsers` saying the trace's user messages in
place of the task's scripted or simulated user. So a trace of more turns than ``maxTurns``
runs out of turns there, as a live agent would, and one that ends on a user message the
agent never answered errors at that turn (or runs out of turns, when it is past the last).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from ..agents.base import AgentReply, ToolPort, TrialContext
from ..agents.scripted import play_back
from ..core.records import Recording
from ..core.suite import Conversation
from ..users import UserPlayer, UserPlayers
from ..users.scripted import ScriptedUser
from .records import TraceRecord

AGENT_ID = "openwop-eval.traces"


NOT_RECORDED = "(the trace does not record the user's message)"
"""What the replay's user says for a turn whose user message the trace does not hold."""


class MissingTraceError(LookupError):
    """The traces hold no record of this trial."""


class UnansweredTurnError(RuntimeError):
    """The trace ends on a user message the agent never answered."""


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
        if context.turn is None:  # one input, one reply: every call of every turn
            reply = AgentReply(record.output, record.cost_usd, record.latency_ms)
            calls = ((c.tool, c.args) for c in record.calls)
            return await play_back(port, calls, reply, record.error)
        return await _play_turn(record, context.turn, port)


async def _play_turn(record: TraceRecord, index: int, port: ToolPort) -> AgentReply:
    """Turn ``index`` of the recorded conversation: its calls, then its reply — the whole
    trace's cost and latency on the first turn — or the trace's error on its last turn."""
    turns = record.conversation
    turn = turns[index]  # the user says no more than the trace holds: the turn is there
    calls = [(c.tool, c.args) for c in record.calls if c.turn == index]
    last = index == len(turns) - 1
    error = record.error if last else None
    if error is None and not turn.answered:  # the agent did nothing after the user spoke
        raise UnansweredTurnError(
            f"the trace ends on the user's message of turn {index + 1}, which the agent"
            " never answered"
        )
    first = index == 0
    cost = record.cost_usd if first or record.cost_usd is None else 0.0
    latency = record.latency_ms if first or record.latency_ms is None else 0.0
    return await play_back(port, calls, AgentReply(turn.output, cost, latency), error)


class TraceUsers(UserPlayers):
    """The users of a run of traces: each conversation's user says what the trace records
    it said, turn after turn, then is done — never the task's script or simulator."""

    simulates: ClassVar[bool] = False

    def __init__(self, records: Iterable[TraceRecord]) -> None:
        super().__init__()
        self.records = {(r.task_id, r.trial): r for r in records}

    def player(self, conversation: Conversation, trial: int, task_id: str) -> UserPlayer:
        record = self.records.get((task_id, trial))
        turns = record.conversation[1:] if record is not None else ()
        return ScriptedUser([NOT_RECORDED if t.user is None else t.user for t in turns])

    def __getstate__(self) -> dict[str, Any]:  # sent to another process, its records go too
        return {**super().__getstate__(), "records": self.records}

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self.records = state["records"]


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
