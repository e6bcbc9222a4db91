"""The gated agent in process (``tests.server.gated:agent``): it answers at once, except the
trials from ``input["hold_from"]`` on, which wait until the test opens their host's gate.

A host in process runs on one event loop of its own (tests.server.inprocess), so each loop
has its own gate: an ``asyncio.Event``, no file and no polling. The `serve` process's twin
(tests.hosts) waits for a release file instead.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from openwop_eval.agents import AgentReply

SPEC = "tests.server.gated:agent"
_GATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Event] = (
    weakref.WeakKeyDictionary()
)


def gate(loop: asyncio.AbstractEventLoop) -> asyncio.Event:
    """The gate of the host whose runs execute on ``loop``; closed until released."""
    return _GATES.setdefault(loop, asyncio.Event())


def release(loop: asyncio.AbstractEventLoop) -> None:
    """Open the gate: held trials go on the next time the host's loop runs."""
    gate(loop).set()


async def agent(input: dict[str, Any], tools: Any) -> AgentReply:
    trial = tools.context.trial
    if trial >= input.get("hold_from", 99):
        await gate(asyncio.get_running_loop()).wait()
    await tools.call("crm:lookup", {"n": trial})
    return AgentReply(output="ok", latency_ms=5)
