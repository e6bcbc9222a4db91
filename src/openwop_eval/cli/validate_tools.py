"""What provides tools, for ``validate``: the options that name them, read as ``run`` reads
them. Imported only when one is given (the agents, live tools and MCP client are not light).
"""

from __future__ import annotations

import sys

from rich.console import Console
from rich.markup import escape

from ..agents.mcp.upstream import Upstream, UpstreamError, Upstreams
from ..agents.tool_catalog import ToolCatalog
from ..core.tool_refs import ToolSources
from ..runner.tools import load_live_tools
from .codes import EXIT_INVALID


def tool_sources(
    err: Console, catalog: str | None, live: str | None, upstreams: tuple[str, ...]
) -> ToolSources:
    """The tools of a tool catalog file, a live tools module and MCP upstreams (connected to
    list their tools, then closed); what cannot be read or reached is a usage error, as in
    ``run``."""
    try:
        return _sources(catalog, live, upstreams)
    except (UpstreamError, ValueError, OSError, ImportError) as exc:  # ValueError: AgentSpecError
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        sys.exit(EXIT_INVALID)


def _sources(catalog: str | None, live: str | None, upstreams: tuple[str, ...]) -> ToolSources:
    names: set[str] = set()
    given: list[str] = []
    if catalog is not None:
        names.update(ToolCatalog.from_file(catalog).tools)
        given.append("the tool catalog")
    if live is not None:
        names.update(load_live_tools(live))
        given.append("the live tools")
    if upstreams:
        opened = Upstreams.open([Upstream.parse(spec) for spec in upstreams])
        try:
            names.update(opened.tools)
        finally:
            opened.close()
        given.append("the MCP upstreams")
    return ToolSources(frozenset(names), tuple(given))
