"""What every agent form shares: the trial it is given, the tools it calls, what it returns.

An agent sees its tools only through the runner's tool boundary, so every call is recorded,
served from fixtures or live tools, and counted in the trajectory — whatever the agent is.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

from ..core import JSON

if TYPE_CHECKING:
    from .mcp.hub import TrialServers
    from .mcp.servers import TrialMcp


class ToolMissError(LookupError):
    """Raised to the agent when fixtures are in force and cannot answer a call.

    The trial has already failed closed when this is raised; an agent may catch it and go
    on, but nothing it does afterwards can make the trial pass.
    """


class ToolCallError(RuntimeError):
    """Raised to the agent when a live tool failed."""


class AgentProtocolError(RuntimeError):
    """The agent broke its protocol (bad message, bad output, gone without an answer)."""


class AgentSpecError(ValueError):
    """An ``--agent`` specification that cannot be resolved to an agent."""


@dataclass(frozen=True, slots=True)
class AgentReply:
    """An agent's answer, with the cost and latency it reports (both optional)."""

    output: JSON
    cost_usd: float | None = None
    latency_ms: float | None = None
    transcript: JSON = None
    """What the agent exchanged with a model (messages sent and received), a JSON value: it
    goes to the trial's diagnostics in the local report, never into ``eval.*`` events. An
    exception the agent raises may carry one too, as its ``transcript`` attribute."""

    def __post_init__(self) -> None:
        if self.transcript is not None:  # the store keeps it as JSON: refuse anything else now
            try:
                json.dumps(self.transcript, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise AgentProtocolError(f"the transcript is not JSON: {exc}") from None


@dataclass(frozen=True, slots=True)
class TrialContext:
    """What one trial of one task gives the agent."""

    task_id: str
    trial: int
    input: JSON
    memory: tuple[Mapping[str, Any], ...] = ()
    """The task's ``fixtures.memorySeed``."""
    tool_names: tuple[str, ...] = field(default=())
    """The tools the boundary can answer for this trial (fixtures first, then live tools)."""
    task_tools: tuple[str, ...] = ()
    """The tools the task's trajectory names (a step, a forbidden tool): an MCP server lists
    them with the tools the boundary can answer, as production would offer them all."""
    tool_listing: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """What MCP servers list of the trial's tools, by tool: ``{"description"?, "inputSchema"}``
    — a real server's listing, recorded (a replay) or live (an MCP upstream)."""
    turn: int | None = None
    """A conversation: the agent turn being played (0-based); None for one input, one reply."""
    messages: tuple[Mapping[str, JSON], ...] = ()
    """A conversation: the messages so far, OpenAI-style (``{"role": "user" | "assistant",
    "content": TEXT}``), ending with the user message this turn answers."""

    @property
    def user_message(self) -> str | None:
        """A conversation: the user message this turn answers."""
        if not self.messages:
            return None
        content = self.messages[-1].get("content")
        return content if isinstance(content, str) else None


MCP_TRANSPORT: Final = "mcp"
TRANSPORTS: Final = frozenset({MCP_TRANSPORT, "http", "native"})
"""What ``agent.tool-called``'s ``transport`` may say (the protocol's names)."""


class ToolPort(Protocol):
    """The runner's side of the boundary that the facades below hand calls to."""

    async def call(
        self, tool: str, args: Mapping[str, JSON] | None, transport: str | None = None
    ) -> JSON:
        """Call ``tool``; ``transport`` says how the agent called it when the protocol has a
        name for it (``mcp``: through the trial's MCP servers), recorded on its event."""
        ...


class _Tools:
    def __init__(self, port: ToolPort, context: TrialContext, mcp: TrialMcp | None = None):
        self._port = port
        self.context = context
        self._mcp = mcp

    def _servers(self) -> TrialMcp:
        if self._mcp is None:
            raise RuntimeError("this agent's trials have no MCP servers")
        return self._mcp

    @property
    def memory(self) -> tuple[Mapping[str, Any], ...]:
        return self.context.memory

    @property
    def names(self) -> tuple[str, ...]:
        return self.context.tool_names


class AsyncTools(_Tools):
    """The tools of an ``async`` agent: ``await tools.call("crm:lookup", {"id": 1})``."""

    async def call(self, tool: str, args: Mapping[str, JSON] | None = None) -> JSON:
        return await self._port.call(tool, args)

    async def mcp_servers(self) -> TrialServers:
        """The trial's MCP servers (``.url``, ``.server_url(name)``, ``.config()``): every
        call made through them goes through this boundary, as :meth:`call` does."""
        return await self._servers().opened()


class SyncTools(_Tools):
    """The tools of a plain (sync) agent, which runs in a worker thread: ``tools.call(...)``."""

    def __init__(
        self,
        port: ToolPort,
        context: TrialContext,
        loop: asyncio.AbstractEventLoop,
        mcp: TrialMcp | None = None,
    ):
        super().__init__(port, context, mcp)
        self._loop = loop

    def call(self, tool: str, args: Mapping[str, JSON] | None = None) -> JSON:
        future = asyncio.run_coroutine_threadsafe(self._port.call(tool, args), self._loop)
        return future.result()

    def mcp_servers(self) -> TrialServers:
        """The trial's MCP servers (see :meth:`AsyncTools.mcp_servers`)."""
        return self._servers().open()


class Agent(Protocol):
    """Anything the runner can evaluate."""

    agent_id: str

    async def run(self, context: TrialContext, port: ToolPort) -> AgentReply: ...


class Conversation(Protocol):
    """One trial's conversation with an agent that keeps something across turns (a process,
    a chat, MCP sessions): :meth:`reply` once per turn, then :meth:`aclose`, always."""

    async def reply(self, context: TrialContext) -> AgentReply: ...

    async def aclose(self) -> None: ...


class ConversingAgent(Agent, Protocol):
    """An agent that plays a conversation's turns in one session of its own."""

    def converse(self, context: TrialContext, port: ToolPort) -> Conversation: ...


class TurnByTurn:
    """A conversation with an agent that keeps nothing across turns: each turn is one
    :meth:`Agent.run` with the conversation so far in its context."""

    def __init__(self, agent: Agent, port: ToolPort) -> None:
        self._agent, self._port = agent, port

    async def reply(self, context: TrialContext) -> AgentReply:
        return await self._agent.run(context, self._port)

    async def aclose(self) -> None:
        return None


def conversation_with(agent: Agent, context: TrialContext, port: ToolPort) -> Conversation:
    """The agent's own conversation session, or one :meth:`Agent.run` per turn."""
    converse = getattr(agent, "converse", None)
    if callable(converse):
        session: Conversation = converse(context, port)
        return session
    return TurnByTurn(agent, port)
