"""A Pydantic AI ``Agent`` evaluated unchanged: ``--agent myapp.agents:support``.

Each trial runs the agent itself (``agent.run``) with the task's input as the user's prompt
and one capability of the adapter's, added to that run alone. It wraps each toolset that runs
its tools itself (the agent's function tools, its ``FunctionToolset``s, an MCP server's) so a
call goes to ``tools.call(name, args)`` instead: under the name the model called (a prefix or
a rename above the toolset included), with the arguments as the framework validated them
(defaults filled in), the answer being the tool's return. Everything else runs as it would:
the wrappers around those toolsets (prefix, filter, approval), the model, instructions,
output type and output tools, validators, retries, and the agent's own capabilities and hooks
around each call. The agent object is not changed.

A live tool's failure and a miss reach the model as a failed tool call (``ToolFailed``). Not
routed: the provider's native tools (web search and the like), which the provider runs, and
deferred calls (an ``ExternalToolset``'s, one that needs approval), which end the run as they
would. An MCP server of the agent is still connected to list its tools; only its calls are
routed.

A conversation is continued as Pydantic AI's documentation does it: each turn runs the agent
with the user's new message as its prompt and ``message_history=result.all_messages()`` of the
turn before (the earlier turns with their tool calls and results). Each turn's transcript is
``result.new_messages()``.
"""

from __future__ import annotations

import functools
import json
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pydantic_ai import capture_run_messages
from pydantic_ai.agent import AbstractAgent, AgentRunResult
from pydantic_ai.capabilities import AbstractCapability, CapabilityOrdering
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
)
from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from ...core import JSON
from ..base import AgentReply, AsyncTools, ToolCallError, ToolMissError
from . import FrameworkAgent, conversing, shared


def adapt(obj: object) -> FrameworkAgent | None:
    """The Python agent that runs the Pydantic AI agent ``obj``, or ``None`` for anything else."""
    if not isinstance(obj, AbstractAgent):
        return None
    return conversing(functools.partial(_run, obj), functools.partial(_chat, obj))


async def _run(agent: AbstractAgent[Any, Any], task_input: JSON, tools: AsyncTools) -> AgentReply:
    result = await _played(agent, shared.prompt(task_input), None, tools)
    transcript: JSON = json.loads(result.all_messages_json())
    return AgentReply(
        shared.output_json(result.output, "the agent's output"), transcript=transcript
    )


def _chat(agent: AbstractAgent[Any, Any]) -> FrameworkAgent:
    """A new conversation's agent (a function of the module: it pickles, as ``_run`` does)."""
    return _Chat(agent).turn


class _Chat:
    """One conversation: the messages of its turns so far, as Pydantic AI keeps them."""

    def __init__(self, agent: AbstractAgent[Any, Any]) -> None:
        self.agent = agent
        self.history: list[ModelMessage] | None = None

    async def turn(self, messages: JSON, tools: AsyncTools) -> AgentReply:
        context = tools.context
        history = _history(context.messages[:-1]) if self.history is None else self.history
        result = await _played(self.agent, context.user_message or "", history, tools)
        self.history = result.all_messages()
        transcript: JSON = json.loads(result.new_messages_json())
        return AgentReply(
            shared.output_json(result.output, "the agent's output"), transcript=transcript
        )


def _history(messages: Any) -> list[ModelMessage] | None:
    """A conversation's messages before the first turn the agent plays (none, as the runner
    plays it), in Pydantic AI's form."""
    found: list[ModelMessage] = [
        ModelRequest.user_text_prompt(str(m.get("content")))
        if m.get("role") == "user"
        else ModelResponse(parts=[TextPart(str(m.get("content")))])
        for m in messages
    ]
    return found or None


async def _played(
    agent: AbstractAgent[Any, Any],
    prompt: str,
    history: list[ModelMessage] | None,
    tools: AsyncTools,
) -> AgentRunResult[Any]:
    """One ``agent.run``, its tools routed; what it exchanged goes with its error."""
    with capture_run_messages() as messages:
        try:
            return await agent.run(prompt, message_history=history, capabilities=[_Route(tools)])
        except Exception as exc:  # the messages so far go to the report with its error
            shared.attach_transcript(exc, _messages_json(messages))
            shared.raise_infrastructure(exc)
            raise


def _messages_json(messages: list[Any]) -> JSON:
    return shared.transcript_json(ModelMessagesTypeAdapter.dump_python(messages, mode="json"))


_CALLED_AS: ContextVar[str | None] = ContextVar("openwop_eval_pydantic_ai_tool", default=None)
"""The name the model called the tool being run by, for the toolset that runs it (a prefix
or a rename above it gives it another)."""


@dataclass
class _Route(AbstractCapability[Any]):
    """Routes the run's tools, innermost: a capability's own tools (a tool search, say) stay
    the framework's, and every toolset of the agent's wraps the calls it passes on as it
    would."""

    tools: AsyncTools

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # never part of an agent spec

    def get_ordering(self) -> CapabilityOrdering:
        return CapabilityOrdering(position="innermost")

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any]:
        return _Named(toolset.visit_and_replace(lambda leaf: _Routed(leaf, self.tools)))


@dataclass
class _Named(WrapperToolset[Any]):
    """The run's toolset: notes the name the model called each tool by."""

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        token = _CALLED_AS.set(name)
        try:
            return await super().call_tool(name, tool_args, ctx, tool)
        finally:
            _CALLED_AS.reset(token)


@dataclass
class _Routed(WrapperToolset[Any]):
    """A toolset that lists and runs tools itself (functions, an MCP server's), its calls
    answered by the trial's boundary instead."""

    tools: AsyncTools

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        if tool.tool_def.kind == "external":  # deferred to the agent's caller: the framework's
            return await super().call_tool(name, tool_args, ctx, tool)
        called = _CALLED_AS.get() or name
        args = shared.arguments_json(tool_args, called)
        try:
            return await self.tools.call(called, args)
        except (ToolMissError, ToolCallError) as exc:  # {"error": "…"} to the model
            raise ToolFailed(str(exc)) from None
