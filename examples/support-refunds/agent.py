"""A support agent for refund requests, with a subtle flaw a trajectory check catches.

`support_agent` keeps a cache of the orders it has looked up, to save a CRM call. Its answers
stay right, but from the second conversation on it refunds an order without looking it up
again — on stale data, and against the policy that every refund follows a fresh lookup. An
eval that only checks answers passes it; the suite's trajectory gates it.

`careful_support_agent` is the same agent without the cache.
"""

from __future__ import annotations

import re
from typing import Any

_orders: dict[str, dict[str, Any]] = {}  # the flaw: shared across conversations


async def _lookup(tools: Any, order_id: str, use_cache: bool) -> dict[str, Any]:
    if use_cache and order_id in _orders:
        return _orders[order_id]
    order: dict[str, Any] = await tools.call("crm:lookup-order", {"orderId": order_id})
    _orders[order_id] = order
    return order


async def _answer(request: dict[str, Any], tools: Any, use_cache: bool) -> str:
    message: str = request["message"]
    found = re.search(r"\b([A-Z]-\d+)\b", message)
    if "close my account" in message.lower():
        return ("You can close your account yourself under Settings → Account → Close account."
                " I have not changed anything on your account.")
    if found is None:
        return "Which order would you like me to look at? Please send its number."
    order = await _lookup(tools, found.group(1), use_cache)
    if order.get("customerId") != request.get("customerId"):
        return "I cannot refund this order: it does not belong to your account."
    await tools.call("payments:refund",
                     {"orderId": order["orderId"], "amountUsd": order["totalUsd"]})
    return f"Your order {order['orderId']} has been refunded (${order['totalUsd']:.2f})."


async def support_agent(request: dict[str, Any], tools: Any) -> str:
    return await _answer(request, tools, use_cache=True)


async def careful_support_agent(request: dict[str, Any], tools: Any) -> str:
    return await _answer(request, tools, use_cache=False)
