"""An OpenAI Agents SDK ``Agent`` evaluated unchanged: ``--agent myapp.agents:triage``.

Each trial runs a copy of the agent (``agent.clone``) with the task's input as the user's
turn. Its function tools keep their names, descriptions, schemas and settings (guardrails,
approval, enablement, failure formatter) and only their invocation changes: the arguments
the model sent go to ``tools.call(name, args)`` under the tool's own name, and the answer, as
JSON text, is the tool's output. The agents it hands off to are copied the same way, as the
run reaches them (a cycle of handoffs included). Model, instructions, output type, guardrails
and hooks are the agent's own.

What cannot be routed is refused, naming it, rather than run outside the boundary: a tool
that is not a function tool (hosted ones, such as web search or hosted MCP, and local ones,
such as computer or shell) and an agent's ``mcp_servers``, whose tools reach their servers
themselves (give such an agent the trial's MCP servers: ``tools.mcp_servers()``). An
agent used as a tool (``Agent.as_tool``) is a function tool like another: its calls go to the
boundary, not to the inner agent.

A conversation is continued as the SDK's documentation does it: each turn runs the agent that
spoke last (``result.last_agent``, after a handoff the one handed to) on the run's input list
(``result.to_input_list()``: the earlier turns with their tool calls and results) and the
user's new message. Each turn's transcript is the items that turn added.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from agents import (
    Agent,
    FunctionTool,
    Handoff,
    ItemHelpers,
    RunContextWrapper,
    Runner,
    RunResult,
    TResponseInputItem,
)
from agents.exceptions import AgentsException
from agents.tool import maybe_invoke_function_tool_failure_error_function
from agents.tool_context import ToolContext

from ...core import JSON
from ..base import AgentReply, AgentSpecError, AsyncTools, ToolCallError, ToolMissError
from ..openai_messages import parse_arguments
from . import FrameworkAgent, conversing, shared


def adapt(obj: object) -> FrameworkAgent | None:
    """The Python agent that runs the Agents SDK agent ``obj``, or ``None`` for anything
    else; an agent with something the boundary cannot route is refused here, before a run."""
    if not isinstance(obj, Agent):
        return None
    _check(obj, set())
    return conversing(functools.partial(_run, obj), functools.partial(_chat, obj))


async def _run(agent: Agent[Any], task_input: JSON, tools: AsyncTools) -> AgentReply:
    result = await _played(_Routing(tools).agent(agent), shared.prompt(task_input))
    transcript = shared.transcript_json(result.to_input_list())
    return AgentReply(_output(result, transcript), transcript=transcript)


def _chat(agent: Agent[Any]) -> FrameworkAgent:
    """A new conversation's agent (a function of the module: it pickles, as ``_run`` does)."""
    return _Chat(agent).turn


class _Chat:
    """One conversation: the run's input list so far, and the agent that spoke last."""

    def __init__(self, agent: Agent[Any]) -> None:
        self.agent = agent
        self.routing: _Routing | None = None
        self.items: list[TResponseInputItem] = []

    async def turn(self, messages: JSON, tools: AsyncTools) -> AgentReply:
        if self.routing is None:  # the first turn: the conversation so far, as it is given
            self.routing = _Routing(tools)
            self.agent = self.routing.agent(self.agent)
            given: list[Any] = [dict(m) for m in tools.context.messages]
        else:
            self.routing.tools = tools  # this turn's context; the same boundary
            given = [*self.items, {"role": "user", "content": tools.context.user_message or ""}]
        result = await _played(self.agent, given)
        added = len(given) - 1  # the turn's items: the user's message and what answered it
        self.items, self.agent = result.to_input_list(), result.last_agent
        transcript = shared.transcript_json(self.items[added:])
        return AgentReply(_output(result, transcript), transcript=transcript)


async def _played(routed: Agent[Any], given: str | list[Any]) -> RunResult:
    """One ``Runner.run``; what it exchanged goes with its error."""
    try:
        return await Runner.run(routed, given)
    except AgentsException as exc:  # the run's items so far go to the report with its error
        if exc.run_data is not None:
            data = exc.run_data
            items = ItemHelpers.input_to_new_input_list(data.input)
            items += [item.to_input_item() for item in data.new_items]
            shared.attach_transcript(exc, shared.transcript_json(items))
        raise
    except Exception as exc:  # the model's client, after its own retries
        shared.raise_infrastructure(exc)
        raise


def _output(result: RunResult, transcript: JSON) -> JSON:
    if result.interruptions:
        waiting = sorted({item.tool_name or "?" for item in result.interruptions})
        raise shared.FrameworkRunError(
            f"the run stopped for the approval of {', '.join(waiting)}: a tool that needs"
            " approval cannot be evaluated unattended",
            transcript,
        )
    return shared.output_json(result.final_output, "the agent's final output")


def _refusal(agent: Agent[Any]) -> str | None:
    """Why ``agent`` cannot run through the boundary, if it cannot."""
    for tool in agent.tools:
        if not isinstance(tool, FunctionTool):
            return (
                f"agent {agent.name!r}: tool {tool.name!r} ({type(tool).__name__}) is not a"
                " function tool, so its calls cannot go through the tool boundary; evaluate"
                " a clone without it (agent.clone(tools=[...]))"
            )
    if agent.mcp_servers:
        names = ", ".join(repr(server.name) for server in agent.mcp_servers)
        return (
            f"agent {agent.name!r}: its MCP servers ({names}) are called by the agent itself,"
            " outside the tool boundary; give it the trial's MCP servers instead (a Python"
            " agent on tools.mcp_servers(), or --agent 'mcp:COMMAND')"
        )
    return None


def _check(agent: Agent[Any], seen: set[int]) -> None:
    """Refuses ``agent`` or an agent it hands off to (those named by a ``Handoff`` object are
    known only when the run reaches them, and checked then)."""
    if id(agent) in seen:
        return
    seen.add(id(agent))
    refusal = _refusal(agent)
    if refusal is not None:
        raise AgentSpecError(refusal)
    for target in agent.handoffs:
        if isinstance(target, Agent):
            _check(target, seen)


class _Routing:
    """One trial's copies of the agents, their function tools calling the boundary."""

    def __init__(self, tools: AsyncTools) -> None:
        self.tools = tools
        self.copies: dict[int, Agent[Any]] = {}

    def agent(self, agent: Agent[Any]) -> Agent[Any]:
        found = self.copies.get(id(agent))
        if found is not None:
            return found
        refusal = _refusal(agent)
        if refusal is not None:
            raise AgentSpecError(refusal)
        function_tools = [tool for tool in agent.tools if isinstance(tool, FunctionTool)]
        copy = agent.clone(tools=[self.tool(tool) for tool in function_tools])
        self.copies[id(agent)] = copy  # before its handoffs: one of them may lead back here
        copy.handoffs = [self.handoff(target) for target in agent.handoffs]
        return copy

    def handoff(self, target: Agent[Any] | Handoff[Any, Any]) -> Agent[Any] | Handoff[Any, Any]:
        if isinstance(target, Agent):
            return self.agent(target)
        invoke = target.on_invoke_handoff

        async def routed(context: RunContextWrapper[Any], arguments: str) -> Agent[Any]:
            return self.agent(await invoke(context, arguments))

        return dataclasses.replace(target, on_invoke_handoff=routed)

    def tool(self, tool: FunctionTool) -> FunctionTool:
        async def invoke(context: ToolContext[Any], arguments: str) -> str:
            return await self.call(routed, context, arguments)

        routed = dataclasses.replace(tool, on_invoke_tool=invoke)
        return routed

    async def call(self, tool: FunctionTool, context: ToolContext[Any], arguments: str) -> str:
        args, problem = parse_arguments(arguments)  # else recorded as sent: {"$raw": "…"}
        try:
            result = await self.tools.call(tool.name, args)
        except ToolMissError as exc:
            return shared.miss_text(exc)
        except ToolCallError as exc:  # shown as the tool's own failures are
            shown = await maybe_invoke_function_tool_failure_error_function(
                function_tool=tool, context=context, error=exc
            )
            if shown is None:  # the tool lets its failures end the run
                raise
            return shown
        if problem is not None:
            return shared.error_text("invalid-arguments", problem)
        return shared.tool_text(result)
