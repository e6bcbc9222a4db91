"""The agent ``run`` evaluates, from its flags: the ``--agent`` form and the options that go
with it (an ``openai:`` endpoint, an ``mcp:`` transport, a tool catalog), the ``--tool-map``
renames, and the live tools of ``--mcp-upstream`` servers."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from typing import Literal, Protocol

from ..agents import Agent, AgentSpecError, OpenAIAgentOptions, parse_price, resolve_agent
from ..agents.mcp import McpOptions
from ..agents.mcp.upstream import Upstream, Upstreams, with_upstream_tools
from ..agents.renames import with_renames
from ..files.maps import tool_renames
from ..runner.spec import LiveTool


class AgentFlags(Protocol):
    """The ``run`` options :func:`agent_of` reads."""

    @property
    def agent_spec(self) -> str | None: ...
    @property
    def endpoint(self) -> AgentEndpoint: ...
    @property
    def mcp_transport(self) -> str: ...
    @property
    def tool_catalog(self) -> str | None: ...
    @property
    def agent_id(self) -> str | None: ...
    @property
    def concurrency(self) -> int: ...


@dataclass(frozen=True)
class AgentEndpoint:
    """The ``run`` flags of an ``openai:MODEL`` agent."""

    base_url: str | None
    api_key: str | None
    tool_catalog: str | None
    prices: tuple[str, ...]
    api: Literal["chat", "responses"] | None = None

    @property
    def given(self) -> bool:
        return any((self.base_url, self.api_key, self.tool_catalog, self.prices, self.api))

    def options(self, live: dict[str, LiveTool] | None) -> OpenAIAgentOptions:
        prices = dict(parse_price(p) for p in self.prices)
        api = self.api or "chat"
        return OpenAIAgentOptions(self.base_url, self.api_key, self.tool_catalog, prices, live, api)


def agent_of(args: AgentFlags, live: dict[str, LiveTool] | None) -> Agent | None:
    """The ``--agent``, if given; the endpoint flags go to an ``openai:MODEL`` agent only,
    the MCP transport to an ``mcp:COMMAND`` agent, the tool catalog to either."""
    spec, endpoint = args.agent_spec, args.endpoint
    if spec is None:
        if endpoint.given or args.mcp_transport != "http":
            raise AgentSpecError(
                "--agent-base-url, --agent-api-key, --agent-api, --tool-catalog and --price"
                " need --agent openai:MODEL; --mcp-transport needs --agent mcp:COMMAND"
            )
        return None
    if spec.startswith("mcp:"):
        if endpoint.base_url or endpoint.api_key or endpoint.prices or endpoint.api:
            raise AgentSpecError(
                "--agent-base-url, --agent-api-key, --agent-api and --price need openai:MODEL"
            )
        mcp = McpOptions(args.mcp_transport, args.tool_catalog, live)
        return resolve_agent(spec, agent_id=args.agent_id, mcp=mcp)
    if args.mcp_transport != "http":
        raise AgentSpecError("--mcp-transport is for an mcp:COMMAND agent")
    openai = endpoint.options(live) if spec.startswith("openai:") or endpoint.given else None
    return resolve_agent(spec, agent_id=args.agent_id, threads=args.concurrency, openai=openai)


def renamed(agent: Agent | None, tool_map: str | None) -> Agent | None:
    """The agent behind the ``--tool-map``'s renames, if one is given."""
    if tool_map is None:
        return agent
    if agent is None:
        raise AgentSpecError("--tool-map renames the tools of an --agent: give one")
    return with_renames(agent, tool_renames(tool_map))


def with_upstreams(
    live: dict[str, LiveTool] | None, specs: tuple[str, ...], stack: ExitStack
) -> dict[str, LiveTool] | None:
    """The live tools with those of the ``--mcp-upstream`` servers, connected until the
    ``stack`` closes; a tool both answer is a usage error."""
    if not specs:
        return live
    upstreams = Upstreams.open([Upstream.parse(spec) for spec in specs])
    stack.callback(upstreams.close)
    clash = "a --tools live tool and an --mcp-upstream's"
    return with_upstream_tools(live, upstreams, clash=clash)
