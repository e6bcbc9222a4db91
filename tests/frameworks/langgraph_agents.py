"""A support agent built with LangGraph as a team writes one: ``create_react_agent`` over a
``ChatOpenAI`` model and tools that call the team's APIs directly. Run through the adapter,
no tool's function may run: the APIs here fail the run if they are ever reached.

``graph`` is built when the module is imported, on the OpenAI-compatible endpoint that
``$OPENWOP_TEST_MODEL_URL`` names (a scripted one: ``tests/mcp_servers/scripted_model.py``),
as an application reads its model's address from its environment."""

from __future__ import annotations

import os
import warnings
from typing import Any, NoReturn

from langchain_core.tools import BaseTool, tool
from langchain_openai import ChatOpenAI
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import create_react_agent
from langgraph.warnings import LangGraphDeprecatedSinceV10

from tests.frameworks.adapter_runs import MODEL_URL
from tests.mcp_servers import scripted_model

PROMPT = "You are Acme's support agent. Handle the customer's refund with your tools."


class ApiReachedError(AssertionError):
    """A tool's own function ran: the adapter let a call through to the team's API."""


def _api(path: str, payload: dict[str, Any]) -> NoReturn:
    raise ApiReachedError(f"the tool called its API {path} with {payload}")


@tool
def lookup_order(orderId: str) -> dict[str, Any]:  # noqa: N803 - the API's spelling
    """Look an order up in the CRM by its id: its items, total and delivery status."""
    _api("crm/orders", {"orderId": orderId})


@tool
def issue_refund(orderId: str, amountUsd: float) -> dict[str, Any]:  # noqa: N803
    """Refund an order, in full or in part, to the card it was paid with."""
    _api("payments/refunds", {"orderId": orderId, "amountUsd": amountUsd})


@tool
def delete_account(customerId: str) -> dict[str, Any]:  # noqa: N803
    """Delete a customer's account and everything stored about them."""
    _api("accounts/delete", {"customerId": customerId})


TOOLS: list[BaseTool] = [lookup_order, issue_refund, delete_account]


def build(base_url: str) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The support graph, its model served from ``base_url``."""
    model = ChatOpenAI(base_url=base_url, api_key="x", model=scripted_model.MODEL)
    with warnings.catch_warnings():  # its successor, langchain.agents.create_agent, builds the same
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        return create_react_agent(model, TOOLS, prompt=PROMPT)


graph = build(os.environ[MODEL_URL])
