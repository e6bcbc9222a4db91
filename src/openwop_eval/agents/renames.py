"""An agent whose tools are named otherwise than the suite's: the run's tool map
(``--tool-map FILE``, the host's ``tool_map``: the ``tools`` of a map file,
:mod:`openwop_eval.files.maps`) renames each call at the boundary, so a call of
``search_flights`` is recorded, answered and graded as ``flights:search`` — for every agent
form alike, a framework's agent included."""

from __future__ import annotations

from collections.abc import Mapping

from ..core import JSON
from .base import Agent, AgentReply, Conversation, ToolPort, TrialContext, conversation_with


class RenamedPort:
    """``port`` with each call's tool renamed by ``renames`` (a name it lacks is kept)."""

    def __init__(self, port: ToolPort, renames: Mapping[str, str]) -> None:
        self._port = port
        self._renames = renames

    async def call(
        self, tool: str, args: Mapping[str, JSON] | None, transport: str | None = None
    ) -> JSON:
        renamed = self._renames.get(tool, tool) if isinstance(tool, str) else tool
        return await self._port.call(renamed, args, transport)


class RenamingAgent:
    """``agent`` run behind a :class:`RenamedPort`; its id is the agent's."""

    def __init__(self, agent: Agent, renames: Mapping[str, str]) -> None:
        self.agent = agent
        self.renames = dict(renames)

    @property
    def agent_id(self) -> str:
        return self.agent.agent_id

    @agent_id.setter
    def agent_id(self, value: str) -> None:
        self.agent.agent_id = value

    async def run(self, context: TrialContext, port: ToolPort) -> AgentReply:
        return await self.agent.run(context, RenamedPort(port, self.renames))

    def converse(self, context: TrialContext, port: ToolPort) -> Conversation:
        """A conversation task: the agent's own session (or one run per turn), renamed alike."""
        return conversation_with(self.agent, context, RenamedPort(port, self.renames))


def with_renames(agent: Agent, renames: Mapping[str, str]) -> Agent:
    """``agent`` behind ``renames`` (itself when there are none)."""
    return RenamingAgent(agent, renames) if renames else agent
