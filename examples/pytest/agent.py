"""A shop assistant, in a careful and a hasty version.

`hasty_agent` remembers the orders it has looked up, so from the second conversation on it
answers from memory: the answer is still right, but the required lookup is missing, and the
suite's trajectory fails the task. `careful_agent` looks the order up every time.
"""

from __future__ import annotations

import re
from typing import Any

_seen: dict[str, dict[str, Any]] = {}  # the flaw: shared across conversations


async def _answer(request: dict[str, Any], tools: Any, remember: bool) -> str:
    message: str = request["message"]
    found = re.search(r"\b([A-Z]-\d+)\b", message)
    if found is None:
        return "We are open every day from 9:00 to 18:00."
    order_id = found.group(1)
    if not (remember and order_id in _seen):
        _seen[order_id] = await tools.call("shop:lookup-order", {"orderId": order_id})
    return f"Your order {order_id} has {_seen[order_id]['status']}."


async def careful_agent(request: dict[str, Any], tools: Any) -> str:
    return await _answer(request, tools, remember=False)


async def hasty_agent(request: dict[str, Any], tools: Any) -> str:
    return await _answer(request, tools, remember=True)
