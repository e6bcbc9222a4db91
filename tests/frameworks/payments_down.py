"""Live tools (``--tools``) for the refunds cases whose payments API fails: the order is
found, the refund fails as a live tool fails (an error of the tool, not of the network)."""

from __future__ import annotations

from typing import Any


def lookup_order(args: dict[str, Any]) -> dict[str, Any]:
    return {"orderId": args["orderId"], "totalUsd": 59.9}


def refund(args: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError("the payments API declined the refund")


TOOLS = {"crm:lookup-order": lookup_order, "payments:refund": refund}
