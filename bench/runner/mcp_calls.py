"""``mcp_bench.py``, part 1: one tool call through the MCP boundary, HTTP and stdio, against a
direct ``tools.call`` through the same tool boundary.

A trial's servers are set up as the runner sets them up for a Python agent that asks for
them: a real :class:`~openwop_eval.runner.tools.ToolBoundary` with fixtures (one answer per
call), served by the process's hub (``McpHub.shared().serving(TrialTools.of(...))``), whose
calls the hub hands to this loop, the trial's. On it, ``calls`` sequential calls of
``crm:lookup-order`` per path, after ``WARMUP`` untimed ones:

- ``direct``: ``await tools.call("crm:lookup-order", …)`` (an agent's :class:`AsyncTools`);
- ``http``: ``mcp.Client(servers.server_url("crm"))``, one session held open;
- ``stdio``: ``mcp.Client(StdioServerParameters(command, args))`` of
  ``servers.config("stdio")``: the bridge process the config names, over its stdin and stdout;
- ``wire``: the boundary alone, without a client's own cost: the ``tools/call`` request the
  SDK's client sends (protocol revision 2026-07-28: its headers, ``_meta`` and body), posted
  as bytes on one keep-alive connection (``http.client``, in a thread of its own).

For HTTP it also reads the CPU time each call costs this thread (the SDK's client, the loop,
the boundary) and the hub's thread (the SDK's server), and times opening a session.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import statistics
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mcp import Client, StdioServerParameters
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_types.version import LATEST_MODERN_VERSION

from bench.runner.mcp_script import SERVER
from openwop_eval.agents.base import AsyncTools, TrialContext
from openwop_eval.agents.mcp.hub import McpHub, TrialServers
from openwop_eval.agents.mcp.listing import TrialTools
from openwop_eval.runner.tools import FixtureBook, ToolBoundary

TOOL, NAME, ARGS = f"{SERVER}:lookup-order", "lookup-order", {"orderId": "A-1001"}
ANSWER = {"orderId": "A-1001", "totalUsd": 59.9, "status": "delivered"}
WARMUP = 20
SESSIONS = 20
"""Sessions opened (and closed) for the session figure."""
HUB_THREAD = "openwop-eval-mcp"


def boundary(responses: list[tuple[str, Any]]) -> ToolBoundary:
    """A trial's boundary whose fixtures are ``responses`` ((tool, answer), one per call)."""
    book = FixtureBook.from_responses(responses)
    return ToolBoundary(
        agent_id="bench.mcp",
        task_id="t-0",
        trial=0,
        invocation_id="inv-bench",
        fixtures=book,
        live=None,
    )


async def started_hub() -> McpHub:
    """The process's hub, started (off the loop) if it is not up yet."""
    hub = McpHub.running()
    return hub if hub is not None else await asyncio.to_thread(McpHub.shared)


def hub_cpu() -> float:
    """CPU seconds of the hub's thread so far (Linux), 0 when it is not found."""
    for thread in threading.enumerate():
        if thread.name == HUB_THREAD and thread.ident is not None:
            return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    return 0.0


def quantiles(samples: list[float]) -> dict[str, float]:
    """p50 and p99 of ``samples`` (seconds), in ms."""
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return {"p50Ms": statistics.median(samples) * 1000, "p99Ms": cuts[98] * 1000}


async def timed(
    call: Callable[[], Awaitable[object]], calls: int
) -> tuple[list[float], float, float]:
    """Seconds of each of ``calls`` calls after the warm-up, and the CPU seconds per call of
    this thread and of the hub's."""
    for _ in range(WARMUP):
        await call()
    samples: list[float] = []
    own, hub = time.thread_time(), hub_cpu()
    for _ in range(calls):
        start = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - start)
    return samples, (time.thread_time() - own) / calls, (hub_cpu() - hub) / calls


def checked(result: Any) -> None:
    if result.is_error:
        raise RuntimeError(f"{NAME} answered with an error: {result.content}")


async def direct(calls: int) -> list[float]:
    port = boundary([(TOOL, ANSWER)] * (WARMUP + calls))
    tools = AsyncTools(port, TrialContext("t-0", 0, {}, tool_names=(TOOL,)))
    samples, _, _ = await timed(lambda: tools.call(TOOL, ARGS), calls)
    assert len(port.calls) == WARMUP + calls
    return samples


async def over_mcp(
    transport: str, calls: int, hub: McpHub
) -> tuple[list[float], float, float, list[float]]:
    """Samples, CPU per call (this thread, the hub's) and, over HTTP, the session openings."""
    port = boundary([(TOOL, ANSWER)] * (WARMUP + calls))
    trial = TrialTools.of([TOOL], port, asyncio.get_running_loop())
    opened: list[float] = []
    with hub.serving(trial) as servers:
        async with Client(target(servers, transport)) as client:

            async def call() -> None:
                checked(await client.call_tool(NAME, ARGS))

            samples, own, in_hub = await timed(call, calls)
        if transport == "http":
            opened = await sessions(servers.server_url(SERVER))
    if len(port.calls) != WARMUP + calls:
        raise RuntimeError(f"the boundary saw {len(port.calls)} calls, not {WARMUP + calls}")
    return samples, own, in_hub, opened


def target(servers: TrialServers, transport: str) -> Any:
    if transport == "http":
        return servers.server_url(SERVER)
    entry = servers.config("stdio")["mcpServers"][SERVER]
    return StdioServerParameters(command=entry["command"], args=entry["args"])


async def sessions(url: str) -> list[float]:
    """Seconds to open a session and close it (what an agent pays once per trial), each
    with ``server/discover`` and nothing else."""
    samples = []
    for _ in range(SESSIONS):
        start = time.perf_counter()
        async with Client(url):
            pass
        samples.append(time.perf_counter() - start)
    return samples


async def over_wire(calls: int, hub: McpHub) -> tuple[list[float], float]:
    """Samples and the hub's CPU per call of ``calls`` posted requests (see ``wire``)."""
    port = boundary([(TOOL, ANSWER)] * (WARMUP + calls))
    trial = TrialTools.of([TOOL], port, asyncio.get_running_loop())
    with hub.serving(trial) as servers:
        samples, in_hub = await asyncio.to_thread(posting, servers.server_url(SERVER), calls)
    if len(port.calls) != WARMUP + calls:
        raise RuntimeError(f"the boundary saw {len(port.calls)} calls, not {WARMUP + calls}")
    return samples, in_hub


def posting(url: str, calls: int) -> tuple[list[float], float]:
    """Post the SDK client's ``tools/call`` request ``WARMUP + calls`` times on one connection;
    the time of each after the warm-up and the hub's CPU per call."""
    path = "/" + url.split("/", 3)[3]
    connection = http.client.HTTPConnection(url.split("/")[2])
    meta = {
        PROTOCOL_VERSION_META_KEY: LATEST_MODERN_VERSION,
        CLIENT_INFO_META_KEY: {"name": "bench", "version": "1"},
        CLIENT_CAPABILITIES_META_KEY: {},
    }
    params = {"name": NAME, "arguments": ARGS, "_meta": meta}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": LATEST_MODERN_VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": NAME,
    }

    def call() -> None:
        connection.request("POST", path, body, headers)
        answer = connection.getresponse()
        text = answer.read()
        if answer.status != 200 or b'"error"' in text or b'"isError":true' in text:
            raise RuntimeError(f"the hub answered {answer.status}: {text[:200]!r}")

    for _ in range(WARMUP):
        call()
    samples: list[float] = []
    hub = hub_cpu()
    for _ in range(calls):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    connection.close()
    return samples, (hub_cpu() - hub) / calls


async def measure(calls: int, rounds: int) -> dict[str, Any]:
    """Every path ``rounds`` times (``calls`` each), the samples of all rounds together."""
    hub = await started_hub()
    pooled: dict[str, list[float]] = {"direct": [], "wire": [], "http": [], "stdio": []}
    cpu_own: list[float] = []
    cpu_hub: list[float] = []
    cpu_wire: list[float] = []
    opened: list[float] = []
    for _ in range(rounds):
        pooled["direct"] += await direct(calls)
        samples, in_hub = await over_wire(calls, hub)
        pooled["wire"] += samples
        cpu_wire.append(in_hub)
        samples, own, in_hub, sessions_s = await over_mcp("http", calls, hub)
        pooled["http"] += samples
        cpu_own.append(own)
        cpu_hub.append(in_hub)
        opened += sessions_s
        pooled["stdio"] += (await over_mcp("stdio", calls, hub))[0]
    figures: dict[str, Any] = {"calls": calls, "rounds": rounds, "warmup": WARMUP}
    for path, samples in pooled.items():
        figures[path] = quantiles(samples)
    for path in ("wire", "http", "stdio"):
        figures[path]["overheadP50Ms"] = figures[path]["p50Ms"] - figures["direct"]["p50Ms"]
        figures[path]["overheadP99Ms"] = figures[path]["p99Ms"] - figures["direct"]["p99Ms"]
    figures["http"]["cpuMsPerCall"] = {
        "clientThread": statistics.median(cpu_own) * 1000,
        "hubThread": statistics.median(cpu_hub) * 1000,
    }
    figures["wire"]["hubCpuMsPerCall"] = statistics.median(cpu_wire) * 1000
    figures["http"]["session"] = quantiles(opened) if len(opened) > 1 else None
    return figures
