"""A support team's agents on the OpenAI Agents SDK, written as the team writes them: a
triage agent hands refunds off to a refunds agent (which may hand back: a cycle), function
tools call the team's APIs, the model is a Chat Completions one. ``--agent
tests.frameworks.sdk_support_agents:triage`` evaluates them with no glue.

Every tool's body calls the team's API, which here fails the run if it is ever reached: a
call the adapter let through would never be answered from the suite's fixtures. The model's
endpoint is read from ``$OPENWOP_TEST_MODEL_URL`` when the module is imported, as an
application reads its configuration."""

from __future__ import annotations

import os
from typing import Any, NoReturn

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    RunContextWrapper,
    WebSearchTool,
    function_tool,
    handoff,
    set_tracing_disabled,
)
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI
from pydantic import BaseModel

set_tracing_disabled(True)  # the team's tests export no traces

MODEL = OpenAIChatCompletionsModel(
    model="support-model",
    openai_client=AsyncOpenAI(base_url=os.environ["OPENWOP_TEST_MODEL_URL"], api_key="sk-test"),
)


class ApiReachedError(AssertionError):
    """A tool's own function ran: the adapter let a call through to the team's API."""


def _api(path: str, payload: dict[str, Any]) -> NoReturn:
    raise ApiReachedError(f"the tool called its API {path} with {payload}")


def _refund_failed(context: RunContextWrapper[Any], error: Exception) -> str:
    return f"The refund did not go through: {error}"


@function_tool
def lookup_order(orderId: str) -> dict[str, Any]:  # noqa: N803 - the API's spelling
    """Look an order up in the CRM: its items, total and delivery status.

    Args:
        orderId: The order's id, such as A-1001.
    """
    _api("crm/orders", {"orderId": orderId})


@function_tool(failure_error_function=_refund_failed)
def refund(orderId: str, amountUsd: float) -> dict[str, Any]:  # noqa: N803
    """Refund an order, in full or in part, to the card it was paid with."""
    _api("payments/refunds", {"orderId": orderId, "amountUsd": amountUsd})


@function_tool
def delete_account(customerId: str) -> dict[str, Any]:  # noqa: N803
    """Delete a customer's account and everything stored about them."""
    _api("accounts/delete", {"customerId": customerId})


@function_tool
def lookup_customer(customerId: str) -> dict[str, Any]:  # noqa: N803
    """Look a customer up in the CRM."""
    _api("crm/customers", {"customerId": customerId})


refunds = Agent(
    name="refunds",
    instructions="Look the order up, then refund it. Hand anything else back to triage.",
    tools=[lookup_order, refund, delete_account, lookup_customer],
    model=MODEL,
)
triage = Agent(
    name="triage",
    instructions="Hand refund requests to the refunds agent.",
    handoffs=[handoff(refunds)],
    model=MODEL,
)
refunds.handoffs.append(triage)


class Decision(BaseModel):
    orderId: str  # noqa: N815
    refund: bool


decider = Agent(
    name="decider",
    instructions="Decide whether the order is refunded.",
    tools=[lookup_order],
    output_type=Decision,
    model=MODEL,
)
"""Structured output: its final output is a :class:`Decision`."""

researcher = Agent(name="researcher", tools=[lookup_order, WebSearchTool()], model=MODEL)
"""A hosted tool, which runs at OpenAI: nothing the boundary can route."""

crm_over_mcp = Agent(
    name="crm",
    mcp_servers=[MCPServerStreamableHttp(params={"url": "http://127.0.0.1:9/mcp"}, name="crm")],
    model=MODEL,
)
"""Tools from an MCP server, which the agent calls itself: the ``mcp:`` form's."""
