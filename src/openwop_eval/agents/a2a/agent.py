"""``a2a:URL``: a deployed agent evaluated over A2A 1.0, through the official ``a2a-sdk``.

Each trial reads the agent's card (``URL/.well-known/agent-card.json``), sends the task's
input as one user message and follows the task it starts to its end — its stream of events
when the card says it streams, else ``GetTask`` until the task is no longer under way — and
takes the last artifact's text (or data) as the output. A conversation task is one A2A
context: each user turn a new message in it, and a task that ended ``input-required`` is
answered in that task. See ``docs/a2a.md``.

What the agent did wrong is its trial's error: a task ``failed``, ``rejected``, ``canceled``
or ``auth-required``, a JSON-RPC error it answered, an answer with no text or data. What kept
the trial from the agent is the infrastructure's (:class:`A2AUnreachableError`, exit 3): no
connection, an HTTP error, a card or an answer that cannot be read.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit

from ...base.errors import InfrastructureError
from ...base.limits import MAX_A2A_POLLS, MAX_A2A_STREAM_EVENTS
from ...core import JSON
from ...core import Task as SuiteTask
from ..base import Agent, AgentReply, AgentSpecError, Conversation, ToolPort, TrialContext
from ..mcp.servers import TrialMcp
from .headers import CredentialVariables, headers_from
from .wire import (
    ANSWERED,
    TERMINAL_ERRORS,
    TOOLS_EXTENSION,
    WORKING,
    A2AReplyError,
    merge_artifact,
    parts_output,
    state_name,
    status_text,
    task_output,
    told_state,
    user_message,
)

if TYPE_CHECKING:
    import httpx
    from a2a.client import Client
    from a2a.types.a2a_pb2 import AgentCard, Message, SendMessageRequest, StreamResponse, Task

    from ...files.suites import LoadedSuite

FIRST_POLL_S = 0.1
"""Seconds before the first ``GetTask`` of a task under way; each wait doubles, up to
:data:`MAX_POLL_S`."""
MAX_POLL_S = 2.0
CANCEL_WAIT_S = 5.0
"""Seconds a trial that ends with its task under way (timed out, or given up on) waits for
the agent to take its ``CancelTask``; the cancel is best-effort and never the trial's error."""
CARD_CHECK_S = 10.0
"""Seconds ``run`` waits for the card before the run, to warn of a missing tool path."""
EXTENSIONS_HEADER = "A2A-Extensions"
ENDED = frozenset({*ANSWERED, *TERMINAL_ERRORS})
"""The states in which a turn is over: answered, or ended as the agent's error."""


class A2AAgentError(RuntimeError):
    """The agent's own error: its task ended failed, rejected, canceled or auth-required, it
    answered a JSON-RPC error, or its answer held no output."""


class A2AUnreachableError(A2AAgentError, InfrastructureError):
    """The agent could not be reached or read: the trial errors on infrastructure."""

    def __init__(self, message: str, endpoint: str) -> None:
        A2AAgentError.__init__(self, message)
        self.endpoint = endpoint


class A2AAgent:
    """``a2a:URL`` (see the module's docstring)."""

    def __init__(
        self, url: str, *, headers: Mapping[str, str] | None = None, agent_id: str | None = None
    ) -> None:
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise AgentSpecError(f"a2a: needs the agent's http(s) base URL, not {url!r}")
        if parts.username is not None or parts.query or parts.fragment:  # the id is recorded
            raise AgentSpecError(
                "a2a: takes a base URL without credentials, query or fragment: give credentials"
                " in $OPENWOP_EVAL_A2A_TOKEN or $OPENWOP_EVAL_A2A_HEADERS (docs/a2a.md)"
            )
        self.url = url.strip().rstrip("/")
        self.agent_id = agent_id or f"a2a:{self.url}"
        self.headers = dict(headers or headers_from({}))

    @classmethod
    def from_url(
        cls,
        url: str,
        environ: Mapping[str, str] | None = None,
        variables: CredentialVariables | None = None,
    ) -> A2AAgent:
        """The agent at ``url``, with the headers the environment's ``variables`` give
        (``docs/a2a.md``); without the SDK installed, a usage error now rather than every
        trial's."""
        if not _sdk_installed():
            raise AgentSpecError("a2a: needs the A2A SDK: pip install 'openwop-eval[a2a]'")
        given = os.environ if environ is None else environ
        return cls(url, headers=headers_from(given, variables or CredentialVariables()))

    def __repr__(self) -> str:  # never shows the headers: they hold credentials
        return f"A2AAgent(url={self.url!r})"

    async def run(self, context: TrialContext, port: ToolPort) -> AgentReply:
        session = _Session(self, context, port)
        try:
            return await session.reply(context)
        finally:
            await session.aclose()

    def converse(self, context: TrialContext, port: ToolPort) -> Conversation:
        """One A2A context for the whole conversation."""
        return _Session(self, context, port)

    async def card(self, http: httpx.AsyncClient) -> AgentCard:
        """The agent's card, read with ``http``; what cannot be read is infrastructure."""
        from a2a.client import A2ACardResolver

        async with self._reading("reading the Agent Card"):
            return await A2ACardResolver(http, self.url).get_agent_card()

    async def has_tool_path(self) -> bool:
        """Whether the card lists the tools extension (an unreadable card raises)."""
        from .http import bounded_client

        async with bounded_client(self.headers) as http:
            return has_tool_path(await self.card(http))

    @contextlib.asynccontextmanager
    async def _reading(self, doing: str) -> AsyncIterator[None]:
        """The SDK's errors told apart: the agent's answers, or the infrastructure's failures."""
        from a2a.client import A2AClientError
        from a2a.utils.errors import A2AError
        from google.protobuf.json_format import ParseError

        try:
            yield
        except A2AClientError as exc:
            raise A2AUnreachableError(f"{doing} at {self.url}: {_cause(exc)}", self.url) from None
        except A2AError as exc:
            raise A2AAgentError(
                f"the agent answered an error: {type(exc).__name__}: {exc}"
            ) from None
        except (ParseError, ValueError, TypeError) as exc:  # an answer the SDK could not read
            raise A2AUnreachableError(
                f"{doing} at {self.url}: malformed: {exc}", self.url
            ) from None


def tool_path_warning(agent: Agent | None, loaded: LoadedSuite | None) -> str | None:
    """What ``run`` says before it starts when ``agent`` is an ``a2a:`` agent whose card does
    not take the trial's MCP servers and ``suite`` has trajectories to grade: each of them
    will fail closed. An agent that cannot be read now is left to its trials (infrastructure)."""
    inner = getattr(agent, "agent", agent)  # behind a --tool-map's renames
    if not isinstance(inner, A2AAgent) or loaded is None:
        return None
    pathed = [task.task_id for task in loaded.suite.tasks if _has_trajectory(task)]
    if not pathed:
        return None
    try:
        if asyncio.run(asyncio.wait_for(inner.has_tool_path(), CARD_CHECK_S)):
            return None
    except (A2AAgentError, TimeoutError):
        return None
    named = ", ".join(pathed[:3]) + (f" and {len(pathed) - 3} more" if len(pathed) > 3 else "")
    return (
        f"the A2A agent at {inner.url} has no tool path (its Agent Card does not list"
        f" {TOOLS_EXTENSION}): the eval sees none of its tool calls, so the trajectory of"
        f" {len(pathed)} task(s) ({named}) fails closed (docs/a2a.md)"
    )


def _has_trajectory(task: SuiteTask) -> bool:
    turns = task.conversation.turns if task.conversation is not None else ()
    return task.trajectory is not None or any(turn.trajectory is not None for turn in turns)


def has_tool_path(card: AgentCard) -> bool:
    """Whether ``card`` says its agent takes a trial's MCP servers (the tools extension)."""
    return any(ext.uri == TOOLS_EXTENSION for ext in card.capabilities.extensions)


class _Session:
    """One trial's exchange with the agent: its client, its MCP servers, its context."""

    def __init__(self, agent: A2AAgent, context: TrialContext, port: ToolPort) -> None:
        self._agent, self._context, self._port = agent, context, port
        self._http: httpx.AsyncClient | None = None
        self._client: Client | None = None
        self._streaming = False
        self._mcp: TrialMcp | None = None
        self._metadata: dict[str, JSON] = {}
        self._context_id: str | None = None
        self._task_id: str | None = None
        """The task that asked for input (``input-required``): the next message answers it."""
        self._under_way: str | None = None
        """The task the agent is working on, until it has ended: cancelled when the trial
        ends first (its timeout) or gives up on it."""

    async def reply(self, context: TrialContext) -> AgentReply:
        from a2a.types.a2a_pb2 import SendMessageConfiguration, SendMessageRequest

        if self._client is None:
            self._client = await self._open()
        said: JSON = context.input if context.turn is None else context.user_message
        if said is None:
            raise A2AAgentError("a conversation turn came without a user message")
        message = user_message(
            said, context_id=self._context_id, task_id=self._task_id, metadata=self._metadata
        )
        request = SendMessageRequest(
            message=message,
            configuration=SendMessageConfiguration(return_immediately=not self._streaming),
        )
        async with self._agent._reading("sending the task"):
            answer = await self._answer(self._client, request)
        self._under_way = None
        return AgentReply(self._output(answer))

    async def _open(self) -> Client:
        """The client for the agent's card; the trial's MCP servers, when the card takes them
        and the trial has tools."""
        from a2a.client import ClientConfig, ClientFactory

        from .http import bounded_client

        self._http = bounded_client(self._agent.headers)
        card = await self._agent.card(self._http)
        tools = (*self._context.tool_names, *self._context.task_tools)
        if has_tool_path(card) and tools:
            self._mcp = TrialMcp(self._context, self._port, asyncio.get_running_loop())
            servers = await self._mcp.opened()
            self._metadata = {
                TOOLS_EXTENSION: {
                    "mcpServers": servers.config()["mcpServers"],
                    "mcpUrl": servers.url,
                }
            }
            self._http.headers[EXTENSIONS_HEADER] = TOOLS_EXTENSION
        self._streaming = card.capabilities.streaming
        config = ClientConfig(streaming=self._streaming, httpx_client=self._http)
        try:
            return ClientFactory(config).create(card)
        except ValueError as exc:  # no interface this client speaks (JSON-RPC)
            raise A2AUnreachableError(
                f"the Agent Card at {self._agent.url} offers no JSON-RPC interface: {exc}",
                self._agent.url,
            ) from None

    async def _answer(self, client: Client, request: SendMessageRequest) -> Task | Message:
        """The agent's message, or its task followed until it has ended: its events while it
        streams, then (a stream gone before the end, or none) ``GetTask``."""
        task: Task | None = None
        events = 0
        # an async generator (the SDK declares an iterator): closed when the task has ended
        sent = cast("AsyncGenerator[StreamResponse, None]", client.send_message(request))
        async with contextlib.aclosing(sent) as stream:
            async for event in stream:
                events += 1
                if events > MAX_A2A_STREAM_EVENTS:
                    raise A2AAgentError(f"the task sent more than {MAX_A2A_STREAM_EVENTS} events")
                kind = event.WhichOneof("payload")
                if kind == "message":
                    return event.message
                task = _applied(task, event)
                if state_name(task) in ENDED:
                    return task
                self._under_way = task.id or None
        if task is None:
            raise A2AUnreachableError(
                f"the agent at {self._agent.url} sent neither a task nor a message",
                self._agent.url,
            )
        return await self._polled(client, task)

    async def _polled(self, client: Client, task: Task) -> Task:
        """``GetTask`` until the task is no longer under way (at most ``MAX_A2A_POLLS``)."""
        from a2a.types.a2a_pb2 import GetTaskRequest

        wait = FIRST_POLL_S
        self._under_way = task.id or None
        for _ in range(MAX_A2A_POLLS):
            await asyncio.sleep(wait)
            wait = min(wait * 2, MAX_POLL_S)
            task = await client.get_task(GetTaskRequest(id=task.id))
            if state_name(task) not in WORKING:
                return task
        raise A2AAgentError(f"the task was still under way after {MAX_A2A_POLLS} polls")

    def _output(self, answer: Task | Message) -> JSON:
        """The answer's output; a task's context kept for the next turn."""
        from a2a.types.a2a_pb2 import Task

        self._context_id = answer.context_id or self._context_id
        try:
            if not isinstance(answer, Task):
                self._task_id = None
                return parts_output(answer.parts)
            state = state_name(answer)
            if state in TERMINAL_ERRORS:
                why = status_text(answer)
                raise A2AAgentError(
                    f"the task ended {TERMINAL_ERRORS[state]}" + (f": {why[:500]}" if why else "")
                )
            if state not in ANSWERED:
                raise A2AUnreachableError(
                    f"the agent at {self._agent.url} answered a task in state {told_state(state)}",
                    self._agent.url,
                )
            self._task_id = answer.id if state == "TASK_STATE_INPUT_REQUIRED" else None
            return task_output(answer)
        except A2AReplyError as exc:
            raise A2AAgentError(str(exc)) from None

    async def _cancel_under_way(self) -> None:
        """Ask the agent to cancel the task the trial leaves under way: best-effort, bounded
        by :data:`CANCEL_WAIT_S`, whatever it answers (a task that ended meanwhile says so)."""
        from a2a.types.a2a_pb2 import CancelTaskRequest

        task_id, self._under_way = self._under_way, None
        if task_id is None or self._client is None:
            return
        with contextlib.suppress(Exception):  # the trial's verdict is made; this is courtesy
            await asyncio.wait_for(
                self._client.cancel_task(CancelTaskRequest(id=task_id)), CANCEL_WAIT_S
            )

    async def aclose(self) -> None:
        try:
            await self._cancel_under_way()
            if self._client is not None:
                await self._client.close()
            if self._http is not None:
                await self._http.aclose()
        finally:
            if self._mcp is not None:
                self._mcp.close()


def _applied(task: Task | None, event: StreamResponse) -> Task:
    """``task`` with a stream event applied: a snapshot replaces it, a status or artifact
    update changes it; an update before any snapshot starts one."""
    from a2a.types.a2a_pb2 import Task

    kind = event.WhichOneof("payload")
    if kind == "task":
        fresh = Task()
        fresh.CopyFrom(event.task)
        return fresh
    if kind not in ("status_update", "artifact_update"):
        raise ValueError(f"an event of no known kind ({kind})")
    update = event.status_update if kind == "status_update" else event.artifact_update
    if task is None:
        task = Task(id=update.task_id, context_id=update.context_id)
    if kind == "status_update":
        task.status.CopyFrom(event.status_update.status)
    else:
        merge_artifact(task, event.artifact_update.artifact, event.artifact_update.append)
    return task


def _sdk_installed() -> bool:
    """Whether ``a2a.client`` can be imported (looked up, not imported: that is slow)."""
    try:
        return importlib.util.find_spec("a2a.client") is not None
    except ImportError:  # no ``a2a`` package at all
        return False


def _cause(exc: BaseException) -> str:
    """The SDK's error, with the size limit told where it was the cause."""
    from .http import ResponseTooLargeError

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ResponseTooLargeError):
            return str(seen)
        seen = seen.__cause__ or seen.__context__
    return str(exc)
