"""``openai:MODEL``: the model under test behind any OpenAI-compatible chat-completions
endpoint (OpenAI, vLLM, Ollama, llama.cpp server, a LiteLLM proxy) — or OpenAI's Responses
API (``api="responses"``) — in the standard tool loop.

The task input becomes the messages, the tools are offered as functions, every tool call the
model makes goes through the runner's tool boundary — fixtures, misses and trajectories apply
exactly as to any agent — and its result goes back to the model, until the model answers
without tool calls: that answer's text is the output. The loop (turns, retries, tool calls,
cost, errors) is this module's whatever the API; the shapes of requests and replies are the
API's :class:`~.openai_messages.Wire`'s. See ``docs/openai-agent.md``.

A conversation task is one chat (:meth:`OpenAIAgent.converse`): each user message is appended
to it, after every earlier turn's messages, tool calls and tool results, and the loop runs
again; each turn's reply reports what that turn exchanged and cost.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..base.errors import InfrastructureError
from ..core import JSON
from ..llm.chat import DEFAULT_BASE_URL, Backoff, ChatEndpoint, env_value
from .base import (
    AgentReply,
    AgentSpecError,
    Conversation,
    ToolCallError,
    ToolMissError,
    ToolPort,
    TrialContext,
)
from .openai_messages import (
    ApiName,
    ChatWire,
    Message,
    ModelReplyError,
    ToolRequest,
    Transcript,
    Wire,
    opening,
    parse_arguments,
)
from .openai_responses import ResponsesWire
from .tool_catalog import (
    PERMISSIVE,
    Price,
    ToolCatalog,
    ToolSpec,
    decode_function_name,
    function_name,
    live_declarations,
)

if TYPE_CHECKING:  # imported where a request is made: it is slow to import
    import httpx

APIS: dict[str, Wire] = {"chat": ChatWire(), "responses": ResponsesWire()}
"""The APIs an ``openai:MODEL`` agent speaks, by the name ``--agent-api`` gives."""
DEFAULT_MAX_TURNS = 32
"""Model turns (completions) a trial may take before it errors."""
DEFAULT_MAX_ATTEMPTS = 4
"""Attempts per turn: a 408, 429, 5xx, transport error or non-completion is retried."""
DEFAULT_TIMEOUT_S = 120.0
"""Seconds one request may take (the trial's own ``--timeout`` bounds the whole loop)."""


class OpenAIAgentError(RuntimeError):
    """The trial errors: the endpoint refused or kept failing, the model's reply was not
    usable, or the step cap was reached. ``transcript`` is what was exchanged until then."""

    def __init__(self, message: str, transcript: JSON = None) -> None:
        RuntimeError.__init__(self, message)  # not super(): a subclass may be one more error
        self.transcript = transcript


class EndpointUnreachableError(OpenAIAgentError, InfrastructureError):
    """Every attempt at a turn failed to get an answer (transport errors, 408, 429, 5xx, a
    body that is no reply): the trial errors on infrastructure, not as the agent's failure."""

    def __init__(self, message: str, transcript: JSON, endpoint: str) -> None:
        OpenAIAgentError.__init__(self, message, transcript)
        self.endpoint = endpoint


@dataclass(frozen=True)
class OpenAIAgentOptions:
    """What ``run`` flags (or a host's agent config) give an ``openai:MODEL`` agent; the
    environment fills what they leave out (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``)."""

    base_url: str | None = None
    api_key: str | None = None
    tool_catalog: str | None = None
    """A tool catalog file (see :mod:`.tool_catalog`)."""
    prices: Mapping[str, Price] = field(default_factory=dict)
    """Per model, over the catalog's ``models``."""
    live_tools: Mapping[str, Callable[..., Any]] | None = None
    """Live tools, whose own declarations (``parameters``, docstring) describe them."""
    api: ApiName = "chat"
    """``chat`` (``POST /chat/completions``) or ``responses`` (``POST /responses``)."""


class OpenAIAgent:
    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        catalog: ToolCatalog | None = None,
        declarations: Mapping[str, ToolSpec] | None = None,
        prices: Mapping[str, Price] | None = None,
        max_turns: int | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        timeout: float = DEFAULT_TIMEOUT_S,
        backoff: Backoff | None = None,
        client: httpx.AsyncClient | None = None,
        agent_id: str | None = None,
        api: str = "chat",
    ) -> None:
        if not model.strip():
            raise AgentSpecError("openai: needs a model, e.g. openai:gpt-4o-mini")
        if api not in APIS:
            raise AgentSpecError(f"the API must be one of {', '.join(APIS)}, not {api!r}")
        self.wire = APIS[api]
        self.catalog = catalog or ToolCatalog.empty()
        turns = max_turns or self.catalog.max_turns or DEFAULT_MAX_TURNS
        if turns < 1 or max_attempts < 1 or timeout <= 0:
            raise AgentSpecError("max_turns and max_attempts must be ≥ 1, timeout > 0")
        self.model = model
        self.agent_id = agent_id or f"openai:{model}"
        self.base_url = base_url.rstrip("/")
        self.max_turns = turns
        self.max_attempts = max_attempts
        self.timeout = timeout
        self.backoff = backoff or Backoff()
        self.declarations = dict(declarations or {})
        self.price = {**self.catalog.prices, **(prices or {})}.get(model)
        self._api_key = api_key or None
        self._client = client

    @classmethod
    def from_options(
        cls,
        model: str,
        options: OpenAIAgentOptions | None = None,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> OpenAIAgent:
        """The flags first, then ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``."""
        options = options or OpenAIAgentOptions()
        env = os.environ if environ is None else environ
        catalog = ToolCatalog.from_file(options.tool_catalog) if options.tool_catalog else None
        live = live_declarations(options.live_tools) if options.live_tools else None
        return cls(
            model.strip(),
            base_url=options.base_url or env_value(env, "OPENAI_BASE_URL") or DEFAULT_BASE_URL,
            api_key=options.api_key or env_value(env, "OPENAI_API_KEY"),
            catalog=catalog,
            declarations=live,
            prices=options.prices,
            api=options.api,
        )

    def __repr__(self) -> str:  # never shows the key
        api = self.wire.name
        return f"OpenAIAgent(model={self.model!r}, base_url={self.base_url!r}, api={api!r})"

    def offer(self, tool_names: tuple[str, ...]) -> tuple[list[Message], dict[str, str]]:
        """The function definitions of every tool the catalog, the live tools or the
        boundary knows, and the table from function name back to tool name."""
        tools = sorted({*self.catalog.tools, *self.declarations, *tool_names})
        table: dict[str, str] = {}
        definitions: list[Message] = []
        for tool in tools:
            name = function_name(tool)
            if name in table:  # only two hashed names can meet: refuse, never merge
                raise AgentSpecError(f"tools {table[name]!r} and {tool!r} map to {name!r}")
            table[name] = tool
            spec = self.catalog.tools.get(tool) or self.declarations.get(tool) or ToolSpec()
            description = spec.description or f"The {tool} tool."
            definitions.append(
                self.wire.tool(name, description, dict(spec.parameters or PERMISSIVE))
            )
        return definitions, table

    async def run(self, context: TrialContext, port: ToolPort) -> AgentReply:
        definitions, table = self.offer(context.tool_names)
        transcript = Transcript(self.model, self.base_url, table, [], self.wire.name)
        endpoint = self.endpoint()
        try:
            transcript.messages += self.wire.first(context.input, self.catalog.system_prompt)
            return await self._loop(endpoint, transcript, definitions, port)
        except ModelReplyError as exc:
            raise self._error(str(exc), transcript) from None
        finally:
            await endpoint.aclose()

    def converse(self, context: TrialContext, port: ToolPort) -> Conversation:
        """One chat for the whole conversation (see the module's docstring)."""
        return _Chat(self, port, context.tool_names)

    def endpoint(self) -> ChatEndpoint:
        return ChatEndpoint(
            self.base_url,
            self._api_key,
            timeout=self.timeout,
            client=self._client,
            api=self.wire.endpoint,
        )

    async def _loop(
        self,
        endpoint: ChatEndpoint,
        transcript: Transcript,
        definitions: list[Message],
        port: ToolPort,
        steps: int = 0,
    ) -> AgentReply:
        """Model turns until an answer; ``steps``: the conversation's model turns before this
        one (the ids of calls a server sent without one stay unique in the chat)."""
        for turn in range(1, self.max_turns + 1):
            body = await self._complete(endpoint, transcript, definitions)
            reply = self.wire.read(body, steps + turn)
            transcript.messages += self.wire.echo(reply)
            if not reply.calls:
                if reply.content is None:
                    refused = f" (refusal: {reply.refusal[:300]})" if reply.refusal else ""
                    raise ModelReplyError(f"the reply has neither text nor tool calls{refused}")
                return AgentReply(
                    reply.content,
                    cost_usd=transcript.cost(self.price),
                    transcript=transcript.as_dict(self.price),
                )
            for call in reply.calls:  # in the order given, one after the other
                transcript.messages.append(await self._call_tool(port, call, transcript))
        raise self._error(
            f"the model took {self.max_turns} turns without a final answer (the step cap)",
            transcript,
        )

    async def _complete(
        self, endpoint: ChatEndpoint, transcript: Transcript, definitions: list[Message]
    ) -> Mapping[str, Any]:
        """One model turn: the reply's body, after the retries it took."""
        temperature = self.catalog.temperature
        conversation = transcript.conversation()
        payload = self.wire.request(self.model, conversation, definitions, temperature)
        failures: list[str] = []
        for attempt in range(1, self.max_attempts + 1):
            result = await endpoint.post(payload)
            if result.kind == "ok" and result.body is not None:
                transcript.received(self.wire.served(result.body), failures)
                return result.body
            failures.append(f"attempt {attempt}: {result.error}")
            if result.kind == "refused":
                raise self._error(
                    f"POST {endpoint.url} answered HTTP {result.status}:"
                    f" {result.excerpt or '(empty body)'}",
                    transcript,
                )
            if attempt < self.max_attempts:
                await self.backoff.pause(attempt, result.wait)
        listed = "\n".join(f"  {f}" for f in failures)
        noun, attempts = endpoint.api.noun, self.max_attempts
        raise EndpointUnreachableError(  # never an answer: the endpoint's failure, not the model's
            f"no {noun} from {endpoint.url} after {attempts} attempt(s):\n{listed}",
            transcript.as_dict(self.price),
            endpoint.url,
        )

    async def _call_tool(
        self, port: ToolPort, call: ToolRequest, transcript: Transcript
    ) -> Message:
        """Through the boundary; what it answered (or why not), as the wire sends it back."""
        tool = (
            transcript.functions.get(call.function)
            or decode_function_name(call.function)
            or call.function  # a name it was never offered: the boundary records the attempt
        )
        arguments, problem = parse_arguments(call.arguments)
        content: JSON
        try:
            result = await port.call(tool, arguments)
        except ToolMissError as exc:
            content = _tool_error("fixture-miss", str(exc))
        except ToolCallError as exc:
            content = _tool_error("tool-error", str(exc))
        else:
            content = result
        if problem is not None:  # recorded as sent; the model hears what was wrong
            content = _tool_error("invalid-arguments", problem)
        return self.wire.tool_output(call, json.dumps(content, ensure_ascii=False))

    def _error(self, message: str, transcript: Transcript) -> OpenAIAgentError:
        return OpenAIAgentError(message, transcript.as_dict(self.price))


class _Chat:
    """A conversation's chat: the messages of its turns so far, sent again with each new one;
    the endpoint's connections kept for every turn."""

    def __init__(self, agent: OpenAIAgent, port: ToolPort, tool_names: tuple[str, ...]) -> None:
        self._agent, self._port = agent, port
        self._definitions, self._table = agent.offer(tool_names)
        self._endpoint = agent.endpoint()
        self._history: list[Message] = []
        self._steps = 0

    async def reply(self, context: TrialContext) -> AgentReply:
        agent = self._agent
        transcript = Transcript(
            agent.model, agent.base_url, self._table, [], agent.wire.name, earlier=self._history
        )
        try:
            transcript.messages += self._said(context)
            return await agent._loop(
                self._endpoint, transcript, self._definitions, self._port, self._steps
            )
        except ModelReplyError as exc:
            raise agent._error(str(exc), transcript) from None
        finally:
            self._history = transcript.conversation()
            self._steps += len(transcript.turns)

    def _said(self, context: TrialContext) -> list[Message]:
        """What this turn adds: the system prompt and the first user message, then each next
        user message."""
        text = context.user_message
        if text is None:
            raise ModelReplyError("a conversation turn came without a user message")
        if not self._history:
            return opening(context.input, self._agent.catalog.system_prompt, context.messages)
        return [{"role": "user", "content": text}]

    async def aclose(self) -> None:
        await self._endpoint.aclose()


def _tool_error(kind: str, message: str) -> dict[str, JSON]:
    return {"error": {"kind": kind, "message": message}}
