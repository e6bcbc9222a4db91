"""``mcp_bench.py``, part 2: trials of an in-process Python agent that gets its tools over MCP,
through the runner, against the ideal.

The suite (:func:`suite`, shared with part 3): one task per 10 trials, each with a fixture
answer for each of the five ``crm`` tools of ``mcp_script.TOOLS``, a golden answer, and the
five calls as its trajectory, in order. The agent (:func:`agent`) is a Python callable, as
``--agent file.py:function`` gives the runner: it asks ``await tools.mcp_servers()`` for the
trial's servers and runs ``mcp_script.play`` on ``server_url("crm")``: one ``mcp.Client``
session, and in it five times think time / 5 (``asyncio.sleep``), then a call. So a trial
thinks ``think_ms`` in all (50 ms: 5 × 10 ms) and makes 5 calls. The run is
``run_suite_async`` on a fresh SQLite store, at ``concurrency``; the ideal is
trials × think time / concurrency, what the run would take if a call and the runner cost
nothing. With ``shared_client`` the agent keeps one ``httpx2.AsyncClient`` for all its trials
(``streamable_http_client(url, http_client=…)``) instead of the one ``mcp.Client(url)``
creates for each session. Each run is followed by its control: the same trials with
``tools.call`` in place of the MCP client (:func:`direct_agent`), against the same ideal.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
from mcp.client.streamable_http import streamable_http_client

from bench.runner.mcp_calls import hub_cpu, started_hub
from bench.runner.mcp_script import ANSWER, SERVER, TOOLS, play
from openwop_eval import parse_suite
from openwop_eval.agents.base import AsyncTools
from openwop_eval.agents.python import PythonAgent
from openwop_eval.runner.api import run_suite_async
from openwop_eval.runner.run import RunOptions
from openwop_eval.store import Store

NAMES = [f"{SERVER}:{tool}" for tool in TOOLS]


def suite(trials: int, suite_id: str) -> dict[str, Any]:
    """``trials`` trials: one task per 10 trials (at least one task)."""
    tasks = max(1, trials // 10)

    def task(i: int) -> dict[str, Any]:
        order = f"A-{1000 + i}"
        return {
            "taskId": f"refund-{i:04d}",
            "input": {"orderId": order},
            "expected": {
                "kind": "golden",
                "match": {"strategy": "exact", "value": ANSWER},
                "trajectory": {
                    "steps": [{"tool": name, "args": {"orderId": order}} for name in NAMES],
                    "order": "in-order",
                    "forbidden": ["accounts:delete"],
                },
            },
            "fixtures": {
                "toolResponses": [
                    {"tool": name, "response": {"orderId": order, "ok": True}} for name in NAMES
                ]
            },
        }

    return {
        "suiteId": suite_id,
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 1},
        "trials": {"count": max(1, trials // tasks)},
        "tasks": [task(i) for i in range(tasks)],
    }


def agent(think_s: float, http: httpx2.AsyncClient | None) -> Callable[..., Awaitable[str]]:
    """The in-process agent (see the module's docstring)."""

    async def refund(input: Any, tools: AsyncTools) -> str:
        servers = await tools.mcp_servers()
        url = servers.server_url(SERVER)
        target = url if http is None else streamable_http_client(url, http_client=http)
        await play(target, input["orderId"], think_s)
        return ANSWER

    return refund


def direct_agent(think_s: float) -> Callable[..., Awaitable[str]]:
    """The control: the same trials with ``tools.call`` in place of the MCP client."""

    async def refund(input: Any, tools: AsyncTools) -> str:
        for name in NAMES:
            await asyncio.sleep(think_s / len(NAMES))
            await tools.call(name, {"orderId": input["orderId"]})
        return ANSWER

    return refund


async def played(doc: dict[str, Any], fn: Callable[..., Any], concurrency: int) -> dict[str, Any]:
    """One run to a fresh SQLite store: wall time, CPU (the process; the hub's thread) and
    the run's summary."""
    loaded = parse_suite(doc)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{Path(tmp) / 'store.sqlite'}")
        try:
            options = RunOptions(concurrency=concurrency)
            cpu, hub = time.process_time(), hub_cpu()
            start = time.perf_counter()
            result = await run_suite_async(
                loaded, PythonAgent(fn, "bench.mcp-inprocess"), store=store, options=options
            )
            seconds = time.perf_counter() - start
            return {
                "seconds": seconds,
                "cpuSeconds": time.process_time() - cpu,
                "hubCpuSeconds": hub_cpu() - hub,
                "summary": result.summary,
            }
        finally:
            store.close()


async def run_once(trials: int, think_ms: float, concurrency: int, shared: bool) -> dict[str, Any]:
    """One run (the hub is started first, once per process, as the first trial that asks
    for its servers would start it)."""
    await started_hub()
    doc = suite(trials, "bench.evals.mcp-inprocess")
    n = len(doc["tasks"]) * doc["trials"]["count"]
    http = httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) if shared else None
    try:
        done = await played(doc, agent(think_ms / 1000, http), concurrency)
    finally:
        if http is not None:
            await http.aclose()
    control = await played(doc, direct_agent(think_ms / 1000), concurrency)
    for run in (done, control):
        if not run["summary"].get("passed"):
            raise RuntimeError(f"an in-process run did not pass: {run['summary']}")
    ideal = n * think_ms / 1000 / concurrency
    return {
        "trials": n,
        "callsPerTrial": len(TOOLS),
        "thinkMsPerTrial": think_ms,
        "concurrency": concurrency,
        "seconds": round(done["seconds"], 3),
        "idealSeconds": round(ideal, 3),
        "ratio": round(done["seconds"] / ideal, 3),
        "cpuSeconds": round(done["cpuSeconds"], 3),
        "hubCpuSeconds": round(done["hubCpuSeconds"], 3),
        "cpuMsPerTrial": round(done["cpuSeconds"] / n * 1000, 3),
        "directSeconds": round(control["seconds"], 3),
        "directRatio": round(control["seconds"] / ideal, 3),
        "directCpuMsPerTrial": round(control["cpuSeconds"] / n * 1000, 3),
    }
