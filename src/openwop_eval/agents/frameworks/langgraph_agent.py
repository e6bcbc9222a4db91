"""A compiled LangGraph graph as an agent: ``--agent myapp.agents:graph`` names the graph
``langgraph.prebuilt.create_react_agent`` or LangChain's ``create_agent`` returned (or any
graph with a ``ToolNode``), and it runs as it is — its model, prompts, tools and their schemas
as the model sees them, its middleware — except that the ``ToolNode`` that runs tools hands
each call to the trial's tool boundary instead of the tool's function.

The hook is the one ``ToolNode`` documents, ``awrap_tool_call``: the graph is copied with each
``ToolNode`` rebuilt around the call's routing (the team's object is never changed), and a
wrapper the team gave the node (a middleware's ``wrap_tool_call``) still wraps the call. A
call of a tool the node does not have is answered by LangGraph itself, as in production.

Each call goes to ``tools.call(name, args)`` under the tool's LangChain name, one at a time,
and its answer is the tool's ``ToolMessage``; a miss or a failed live tool is one with status
``error`` (the miss as every adapter's model sees one, the failure as its text), and the run
goes on. The task's input becomes the graph's: an object with ``messages`` is the graph's
input as it is, anything else one user message (:func:`.shared.prompt`). The output is the
state's ``structured_response`` when there is one, else the text of the last AI message; the
transcript is the run's messages in the OpenAI chat format.

A conversation runs on one ``thread_id`` of its own: each turn's input is the ``messages`` of
the state the turn before ended with (the earlier turns with their tool calls and results)
and the user's new message, as a graph with or without a checkpointer continues a chat. Each
turn's transcript is the messages that turn added.
"""

from __future__ import annotations

import asyncio
import contextvars
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage, convert_to_openai_messages
from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.pregel import Pregel
from langgraph.types import Command

from ...core import JSON
from ..base import (
    AgentProtocolError,
    AgentReply,
    AgentSpecError,
    AsyncTools,
    ToolCallError,
    ToolMissError,
)
from . import FrameworkAgent, conversing, shared

Answer: TypeAlias = ToolMessage | Command[Any]
Execute: TypeAlias = Callable[[ToolCallRequest], Awaitable[Answer]]


@dataclass(frozen=True, slots=True)
class _Trial:
    tools: AsyncTools
    lock: asyncio.Lock
    """One call at a time, in the order the model asked for them (the trajectory's order)."""


_TRIAL: contextvars.ContextVar[_Trial | None] = contextvars.ContextVar(
    "openwop_eval_langgraph_trial", default=None
)
"""The trial a run of the routed graph is for: its nodes run in copies of the run's context."""


def adapt(obj: object) -> FrameworkAgent | None:
    """The agent that runs the compiled graph ``obj`` through the tool boundary; ``None`` for
    an object of LangGraph or LangChain that is not a graph."""
    if isinstance(obj, StateGraph):
        raise AgentSpecError(
            "the agent is a StateGraph that is not compiled: name the graph .compile() returns"
        )
    if not isinstance(obj, Pregel):
        return None
    graph = _routed_graph(obj)
    if graph is None:
        raise AgentSpecError(
            f"the LangGraph graph {obj.name!r} has no ToolNode (langgraph.prebuilt.ToolNode, the"
            " node create_react_agent and create_agent run tools with) among its nodes or its"
            " subgraphs' nodes: there is no tool call to route through the tool boundary"
        )

    async def run(task_input: JSON, tools: AsyncTools) -> AgentReply:
        return reply_of(await _streamed(graph, graph_input(task_input), _thread(), tools))

    return conversing(run, lambda: _Chat(graph).turn)


def _thread() -> RunnableConfig:
    """A thread of its own, for a graph compiled with a checkpointer."""
    return RunnableConfig(configurable={"thread_id": f"openwop-eval-{uuid.uuid4()}"})


async def _streamed(
    graph: Pregel[Any, Any, Any, Any],
    given: dict[str, Any],
    config: RunnableConfig,
    tools: AsyncTools,
) -> Any:
    """The graph's final state for ``given``, its tool calls routed."""
    token = _TRIAL.set(_Trial(tools, asyncio.Lock()))
    state: Any = None
    try:  # step by step, so a run that fails still shows what it exchanged
        async for step in graph.astream(given, config, stream_mode="values"):
            state = step
    except Exception as exc:  # the messages so far go to the report with its error
        shared.attach_transcript(exc, _transcript(state))
        shared.raise_infrastructure(exc)
        raise
    finally:
        _TRIAL.reset(token)
    return state


class _Chat:
    """One conversation: its thread, and the messages its last turn's state ended with."""

    def __init__(self, graph: Pregel[Any, Any, Any, Any]) -> None:
        self.graph, self.config = graph, _thread()
        self.messages: list[BaseMessage] | None = None

    async def turn(self, messages: JSON, tools: AsyncTools) -> AgentReply:
        context = tools.context
        if self.messages is None:  # the first turn: the conversation so far, as it is given
            given: list[Any] = [dict(m) for m in context.messages]
            before = 0
        else:
            new = {"role": "user", "content": context.user_message or ""}
            given, before = [*self.messages, new], len(self.messages)
        state = await _streamed(self.graph, {"messages": given}, self.config, tools)
        reply = reply_of(state)
        self.messages = _messages(state)
        transcript = shared.transcript_json(convert_to_openai_messages(self.messages[before:]))
        return AgentReply(reply.output, transcript=transcript)


def graph_input(task_input: JSON) -> dict[str, Any]:
    """The graph's input for the task's: see the module's documentation."""
    if isinstance(task_input, dict) and "messages" in task_input:
        return dict(task_input)
    return {"messages": [{"role": "user", "content": shared.prompt(task_input)}]}


def reply_of(state: Any) -> AgentReply:
    """The output and transcript of the graph's final state."""
    if not isinstance(state, Mapping):
        raise AgentProtocolError(f"the graph's output is not a state: {type(state).__name__}")
    structured = state.get("structured_response")
    output: JSON
    if structured is not None:
        output = shared.output_json(structured, "the graph's structured response")
    else:
        answers = [m for m in _messages(state) if isinstance(m, AIMessage)]
        output = answers[-1].text if answers else None
    return AgentReply(output, transcript=_transcript(state))


def _messages(state: Any) -> list[BaseMessage]:
    found = state.get("messages") if isinstance(state, Mapping) else None
    return [m for m in found if isinstance(m, BaseMessage)] if isinstance(found, list) else []


def _transcript(state: Any) -> JSON:
    """The state's messages in the OpenAI chat format."""
    return shared.transcript_json(convert_to_openai_messages(_messages(state)))


def _routed_graph(graph: Pregel[Any, Any, Any, Any]) -> Pregel[Any, Any, Any, Any] | None:
    """A copy of ``graph`` whose ``ToolNode``s (its own and its subgraphs') route their calls;
    ``None`` when it has none."""
    nodes = dict(graph.nodes)
    found = False
    for name, node in graph.nodes.items():
        bound: Any = node.bound
        if isinstance(bound, ToolNode):
            nodes[name] = node.copy({"bound": _routed_node(bound)})
            found = True
        elif isinstance(bound, Pregel) and (inner := _routed_graph(bound)) is not None:
            nodes[name] = node.copy({"bound": inner, "subgraphs": [inner]})
            found = True
    return graph.copy({"nodes": nodes}) if found else None


def _routed_node(node: ToolNode) -> ToolNode:
    """``node`` rebuilt with the same tools and settings, its calls routed. ToolNode offers no
    public way to read its settings, so they are read where it keeps them."""
    wrap: Callable[..., Answer] | None = getattr(node, "_wrap_tool_call", None)
    awrap: Callable[..., Awaitable[Answer]] | None = getattr(node, "_awrap_tool_call", None)

    async def routed(request: ToolCallRequest, execute: Execute) -> Answer:
        async def innermost(req: ToolCallRequest) -> Answer:
            # A tool the node lacks: LangGraph's own error, as production answers it.
            return await (execute(req) if req.tool is None else _route(req))

        if awrap is not None:
            return await awrap(request, innermost)
        if wrap is not None:  # a sync wrapper: in a thread, its calls made on this loop
            loop = asyncio.get_running_loop()

            def blocking(req: ToolCallRequest) -> Answer:
                return asyncio.run_coroutine_threadsafe(innermost(req), loop).result()

            return await asyncio.to_thread(wrap, request, blocking)
        return await innermost(request)

    return ToolNode(
        list(node.tools_by_name.values()),
        name=node.name or "tools",
        tags=None if node.tags is None else list(node.tags),
        handle_tool_errors=getattr(node, "_handle_tool_errors", True),
        messages_key=getattr(node, "_messages_key", "messages"),
        awrap_tool_call=routed,
    )


async def _route(request: ToolCallRequest) -> ToolMessage:
    """The call, through the trial's boundary under the tool's LangChain name; its answer (or
    why there is none) as the tool's message."""
    trial = _TRIAL.get()
    if trial is None:
        raise RuntimeError("a routed LangGraph tool was called outside a trial")
    call = request.tool_call
    name, call_id = call["name"], call["id"]
    try:
        async with trial.lock:
            result = await trial.tools.call(name, shared.arguments_json(call["args"], name))
    except ToolMissError as exc:
        return ToolMessage(shared.miss_text(exc), name=name, tool_call_id=call_id, status="error")
    except ToolCallError as exc:  # as LangChain shows a tool's error: its text
        return ToolMessage(str(exc), name=name, tool_call_id=call_id, status="error")
    return ToolMessage(shared.tool_text(result), name=name, tool_call_id=call_id)
