"""A support agent on Pydantic AI, written as a team writes one: tools registered on the
agent and a toolset of the accounts API under its prefix (``accounts_delete``), all calling
the team's APIs, an audit hook on every tool call, and an OpenAI chat model. ``--agent
tests.frameworks.pydantic_support_agent:support`` evaluates it with no glue.

Every tool's body calls the team's API, which here fails the run if it is ever reached: a
call the adapter let through would never be answered from the suite's fixtures. The model's
endpoint is read from ``$OPENWOP_TEST_MODEL_URL`` when the module is imported, as an
application reads its configuration."""

from __future__ import annotations

import os
from typing import Any, NoReturn

from pydantic import BaseModel
from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import Hooks
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

MODEL = OpenAIChatModel(
    "support-model",
    provider=OpenAIProvider(base_url=os.environ["OPENWOP_TEST_MODEL_URL"], api_key="sk-test"),
)


class ApiReachedError(AssertionError):
    """A tool's own function ran: the adapter let a call through to the team's API."""


def _api(path: str, payload: dict[str, Any]) -> NoReturn:
    raise ApiReachedError(f"the tool called its API {path} with {payload}")


audit = Hooks[Any]()
AUDITED: list[tuple[str, Any]] = []
"""What the team's audit hook saw of each tool call: the tool's name and its result."""


@audit.on.after_tool_execute
async def _audit(
    ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: Any, result: Any
) -> Any:
    AUDITED.append((call.tool_name, result))
    return result


accounts = FunctionToolset[Any]()


@accounts.tool_plain
def delete(customerId: str) -> dict[str, Any]:  # noqa: N803 - the API's spelling
    """Delete a customer's account and everything stored about them."""
    _api("accounts/delete", {"customerId": customerId})


support = Agent(
    MODEL,
    name="support",
    instructions="Look the order up, then refund it.",
    toolsets=[accounts.prefixed("accounts")],
    capabilities=[audit],
)


@support.tool_plain
def lookup_order(orderId: str) -> dict[str, Any]:  # noqa: N803
    """Look an order up in the CRM: its items, total and delivery status.

    Args:
        orderId: The order's id, such as A-1001.
    """
    _api("crm/orders", {"orderId": orderId})


@support.tool_plain
def refund(orderId: str, amountUsd: float, reason: str = "damaged") -> dict[str, Any]:  # noqa: N803
    """Refund an order, in full or in part, to the card it was paid with."""
    _api("payments/refunds", {"orderId": orderId, "amountUsd": amountUsd, "reason": reason})


@support.tool_plain
def lookup_customer(customerId: str) -> dict[str, Any]:  # noqa: N803
    """Look a customer up in the CRM."""
    _api("crm/customers", {"customerId": customerId})


class Decision(BaseModel):
    orderId: str  # noqa: N815
    refund: bool


decider = Agent(
    MODEL,
    name="decider",
    instructions="Decide whether the order is refunded.",
    tools=[lookup_order],
    output_type=Decision,
)
"""Structured output, given by the model's call of its output tool: a :class:`Decision`."""
