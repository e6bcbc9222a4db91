"""A framework-style agent whose tools have their own names (``lookup_order``, ``refund``):
it calls what its input lists, by those names, and answers."""

from __future__ import annotations

from typing import Any

from openwop_eval.agents import AsyncTools


async def agent(task: dict[str, Any], tools: AsyncTools) -> str:
    for name, args in task["calls"]:
        await tools.call(name, args)
    return "refunded"
