"""The tool catalog file, --price, and what live tools say of themselves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openwop_eval.agents import AgentSpecError, Price, ToolCatalog, parse_price
from openwop_eval.agents.tool_catalog import live_declarations

CATALOG_YAML = """\
systemPrompt: You are a support agent.
maxTurns: 8
temperature: 0
tools:
  crm:lookup-order:
    description: Look an order up by its id.
    parameters:
      type: object
      properties: {orderId: {type: string}}
      required: [orderId]
models:
  gpt-4o-mini: {inputPerMillion: 0.15, outputPerMillion: 0.6}
"""


def test_a_catalog_gives_tools_prices_and_the_prompt(tmp_path: Path) -> None:
    path = tmp_path / "tools.yaml"
    path.write_text(CATALOG_YAML)
    catalog = ToolCatalog.from_file(path)
    tool = catalog.tools["crm:lookup-order"]
    assert tool.description == "Look an order up by its id."
    assert tool.parameters == {
        "type": "object",
        "properties": {"orderId": {"type": "string"}},
        "required": ["orderId"],
    }
    assert catalog.prices == {"gpt-4o-mini": Price(0.15, 0.6)}
    assert (catalog.system_prompt, catalog.max_turns, catalog.temperature) == (
        "You are a support agent.",
        8,
        0,
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("tools: {a: {parameters: {type: string}}}", 'must describe an object ("type": "object")'),
        ("tools: {a: {parameters: {type: 12}}}", "not a valid JSON Schema"),
        ("tools:\n  a: {descripton: x}", "line 2: $.tools.a.descripton: Extra inputs"),
        ("models: {m: {inputPerMillion: -1, outputPerMillion: 1}}", "greater than or equal to 0"),
        ("maxTurns: 0", "maxTurns"),
        ("tools: [a, b]", "tools"),
        ("{", "not valid"),
    ],
)
def test_a_bad_catalog_is_refused_with_where(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "tools.yaml"
    path.write_text(text)
    with pytest.raises(AgentSpecError, match="is not a valid tool catalog") as caught:
        ToolCatalog.from_file(path)
    assert problem in str(caught.value)


def test_a_missing_catalog_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AgentSpecError, match="is not a valid tool catalog"):
        ToolCatalog.from_file(tmp_path / "absent.json")


@pytest.mark.parametrize(
    ("spec", "model", "price"),
    [
        ("gpt-4o-mini=0.15/0.6", "gpt-4o-mini", Price(0.15, 0.6)),
        ("llama3.1:8b=0/0", "llama3.1:8b", Price(0, 0)),
        ("meta-llama/Llama-3-8B=1/2", "meta-llama/Llama-3-8B", Price(1, 2)),
    ],
)
def test_prices_parse(spec: str, model: str, price: Price) -> None:
    assert parse_price(spec) == (model, price)


@pytest.mark.parametrize("spec", ["gpt", "gpt=1", "=1/2", "m=1/x", "m=-1/2", "m=nan/1", "m=1/2/3"])
def test_bad_prices_are_refused(spec: str) -> None:
    with pytest.raises(AgentSpecError, match="MODEL=IN/OUT"):
        parse_price(spec)


def test_a_price_turns_tokens_into_dollars() -> None:
    assert Price(0.15, 0.6).cost(1_000_000, 500_000) == pytest.approx(0.45)


def test_live_tools_describe_themselves() -> None:
    def lookup(args: dict[str, Any]) -> Any:
        """Look an order up.

        More text."""

    lookup.parameters = {"type": "object", "properties": {"orderId": {"type": "string"}}}  # type: ignore[attr-defined]

    def refund(args: dict[str, Any]) -> Any:
        return None

    refund.description = "Refund an order."  # type: ignore[attr-defined]

    def silent(args: dict[str, Any]) -> Any:
        return None

    found = live_declarations({"crm:lookup": lookup, "pay:refund": refund, "x:y": silent})
    assert found["crm:lookup"].description == "Look an order up.\n\nMore text."
    assert found["crm:lookup"].parameters == lookup.parameters  # type: ignore[attr-defined]
    assert found["pay:refund"].description == "Refund an order."
    assert found["pay:refund"].parameters is None
    assert "x:y" not in found


def test_a_live_tool_with_bad_parameters_is_refused() -> None:
    def tool(args: dict[str, Any]) -> Any:
        return None

    tool.parameters = {"type": "array"}  # type: ignore[attr-defined]
    with pytest.raises(AgentSpecError, match="live tool t:x: parameters"):
        live_declarations({"t:x": tool})
