"""The scripted agent: replays a file of outputs and tool calls (the conformance agent).

    {"agentId": "core.conformance.mock-agent",
     "tasks": {"<taskId>": [{"output": ..., "toolCalls": [{"tool": "crm:lookup", "args": {}}],
                              "costUsd": 0.0, "latencyMs": 0, "error": "optional"}]},
     "default": [...]}

Trial i of a task replays entry i mod len. In a conversation an entry may give ``"turns":
[{"output", "toolCalls", …}, …]``: turn t plays ``turns[t]`` (without it every turn replays
the entry). Its calls go through the same tool boundary as any
agent's, so fixtures, misses and trajectories apply to it exactly as to a real agent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from ..core import JSON
from ..core.closed import Closed
from ..core.problems import Problem
from ..files.documents import read_document
from .base import (
    AgentProtocolError,
    AgentReply,
    AgentSpecError,
    ToolCallError,
    ToolMissError,
    ToolPort,
    TrialContext,
)


class ScriptedCall(Closed):
    tool: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class ScriptedTurn(Closed):
    """What the agent does in one turn of a conversation, or in its one exchange."""

    output: Any = None
    tool_calls: tuple[ScriptedCall, ...] = Field((), alias="toolCalls")
    cost_usd: float | None = Field(None, alias="costUsd", ge=0)
    latency_ms: float | None = Field(None, alias="latencyMs", ge=0)
    error: str | None = None


class ScriptedEntry(ScriptedTurn):
    turns: tuple[ScriptedTurn, ...] | None = Field(None, min_length=1)
    """A conversation: turn i plays ``turns[i]`` (the entry's own fields are not used)."""


class Script(Closed):
    agent_id: str = Field(alias="agentId", min_length=1)
    tasks: dict[str, tuple[ScriptedEntry, ...]] = Field(default_factory=dict)
    default: tuple[ScriptedEntry, ...] | None = None


class ScriptedError(RuntimeError):
    """The error a script entry asks for: the trial errors."""


class ScriptedAgent:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.agent_id = script.agent_id

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedAgent:
        path = Path(path)
        doc, lines, problems = read_document(path)
        if not problems:
            try:
                return cls(Script.model_validate(doc))
            except ValidationError as exc:
                problems = [
                    Problem(tuple(e["loc"]), e["msg"]).at_line(lines.line_of(tuple(e["loc"])))
                    for e in exc.errors()
                ]
        listed = "\n".join(f"  {p}" for p in problems)
        raise AgentSpecError(f"{path} is not a valid scripted agent:\n{listed}")

    async def run(self, context: TrialContext, port: ToolPort) -> AgentReply:
        entries = self.script.tasks.get(context.task_id) or self.script.default
        if not entries:
            raise AgentProtocolError(
                f"the script has no entry for task {context.task_id!r} and no default"
            )
        entry: ScriptedTurn = entries[context.trial % len(entries)]
        turns = entries[context.trial % len(entries)].turns
        if context.turn is not None and turns is not None:
            if context.turn >= len(turns):
                raise AgentProtocolError(
                    f"the script has {len(turns)} turns for task {context.task_id!r};"
                    f" the conversation reached turn {context.turn + 1}"
                )
            entry = turns[context.turn]
        reply = AgentReply(entry.output, entry.cost_usd, entry.latency_ms)
        calls = [(call.tool, call.args) for call in entry.tool_calls]
        return await play_back(port, calls, reply, entry.error)


async def play_back(
    port: ToolPort,
    calls: Iterable[tuple[str, Mapping[str, JSON]]],
    reply: AgentReply,
    error: str | None = None,
) -> AgentReply:
    """Make ``calls`` in order through the tool boundary, then answer ``reply`` — or raise
    ``error``: the one playback of the scripted agent and of recorded traces."""
    for tool, args in calls:
        try:
            await port.call(tool, args)
        except (ToolMissError, ToolCallError):
            continue  # a replay makes every call, whatever the tools answered
    if error is not None:
        raise ScriptedError(error)
    return reply
