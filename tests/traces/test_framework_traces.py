"""The recipes of docs/traces.md for traces a framework writes, on the real libraries: a
LangGraph run's messages through ``convert_to_openai_messages``, and a Pydantic AI run's
OpenTelemetry spans as OTLP/JSON. Each agent runs as a team runs it (its tools execute), its
model a scripted one on a fake endpoint on loopback; ``grade`` passes the good path and fails
the wrong one, with the framework's tool names renamed to the suite's by ``--map``."""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToJson
from langchain_core.messages import convert_to_openai_messages
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent
from langgraph.warnings import LangGraphDeprecatedSinceV10
from openai import AsyncOpenAI
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel
from pydantic_ai import Agent, InstrumentationSettings, PydanticAIDeprecationWarning
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from tests.fakes.openai_server import FakeEndpoint, serve
from tests.mcp_servers import scripted_model
from tests.mcp_servers.refunds import suite

from .conftest import Invoke

TASK = "refund-good"
LOOKUP = ["crm", "lookup_order", {"orderId": "A-1001"}]
REFUND = ["payments", "issue_refund", {"orderId": "A-1001", "amountUsd": 59.9}]
DELETE = ["accounts", "delete_account", {"customerId": "C-42"}]
ANSWER = ["", "final_result", {"status": "refunded"}]  # Pydantic AI's tool for structured output
PATHS = {
    "good": [LOOKUP, REFUND],
    "forbidden": [LOOKUP, DELETE, REFUND],
    "structured": [LOOKUP, REFUND, ANSWER],
}
"""The calls the scripted model asks for, under the framework's tool names."""
MAP = {
    "tools": {
        "lookup_order": "crm:lookup-order",
        "issue_refund": "payments:refund",
        "delete_account": "accounts:delete",
    }
}
RESULTS = {"lookup_order": {"totalUsd": 59.9}, "issue_refund": {"status": "refunded"}}


@pytest.fixture
def model() -> Iterator[FakeEndpoint]:
    with serve() as fake:
        fake.respond = scripted_model.respond
        yield fake


def task_input(path: str) -> str:
    """What the user says: the scripted model reads the calls to ask for from it."""
    return json.dumps({"calls": PATHS[path], "answer": "refunded"})


def grade(cli: Invoke, tmp: Path, traces: Path) -> Any:
    """``grade`` of one trace against the refunds suite (one trial), tools renamed."""
    (tmp / "suite.json").write_text(json.dumps(suite("good", count=1)))
    (tmp / "map.json").write_text(json.dumps(MAP))
    return cli("grade", str(tmp / "suite.json"), str(traces), "--map", str(tmp / "map.json"))


def lookup_order(orderId: str) -> dict[str, Any]:  # noqa: N803 - the API's spelling
    """Look an order up in the CRM by its id."""
    return RESULTS["lookup_order"]


def issue_refund(orderId: str, amountUsd: float) -> dict[str, Any]:  # noqa: N803
    """Refund an order to the card it was paid with."""
    return RESULTS["issue_refund"]


def delete_account(customerId: str) -> dict[str, Any]:  # noqa: N803
    """Delete a customer's account."""
    return {"deleted": True}


FUNCTIONS = (lookup_order, issue_refund, delete_account)
"""The team's tools, which run: a framework's traces record what they answered."""


# LangGraph: a run's messages, converted to OpenAI chat messages.


def langgraph_trace(model: FakeEndpoint, path: str, out: Path) -> Path:
    """The recipe: run the graph, then one record of its converted messages."""
    llm = ChatOpenAI(base_url=model.url, api_key="x", model=scripted_model.MODEL)
    with warnings.catch_warnings():  # moved to langchain.agents.create_agent, the same graph
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        graph = create_react_agent(llm, [tool(f) for f in FUNCTIONS])
    state = graph.invoke({"messages": [{"role": "user", "content": task_input(path)}]})
    messages = convert_to_openai_messages(state["messages"])
    out.write_text(json.dumps({"taskId": TASK, "trial": 0, "messages": messages}) + "\n")
    return out


@pytest.mark.parametrize(("path", "code"), [("good", 0), ("forbidden", 1)])
def test_a_langgraph_runs_converted_messages_are_graded(
    cli: Invoke, tmp_path: Path, model: FakeEndpoint, path: str, code: int
) -> None:
    graded = grade(cli, tmp_path, langgraph_trace(model, path, tmp_path / "traces.jsonl"))
    assert graded.exit_code == code, graded.stderr
    calls = graded.report["tasks"][0]["trials"][0]["calls"]
    assert [c["tool"] for c in calls] == [MAP["tools"][name] for _, name, _ in PATHS[path]]
    assert calls[0]["args"] == {"orderId": "A-1001"}
    assert calls[0]["result"] == RESULTS["lookup_order"]
    if path == "forbidden":
        assert "called forbidden tool accounts:delete" in graded.stdout


# Pydantic AI: its OpenTelemetry spans, exported as OTLP/JSON.


class Refund(BaseModel):
    status: str


def pydantic_ai_trace(
    model: FakeEndpoint, path: str, out: Path, output_type: Any = str, **settings: Any
) -> Path:
    """The recipe: instrument every agent into an in-memory exporter, run the agent under a
    span naming its task and trial (and, for a structured output, recording it), write the
    spans with the OTLP encoder."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider, **settings))
    tracer = provider.get_tracer("evals")

    async def run() -> None:
        async with AsyncOpenAI(base_url=model.url, api_key="x") as client:
            chat = OpenAIChatModel(
                scripted_model.MODEL, provider=OpenAIProvider(openai_client=client)
            )
            agent = Agent(chat, tools=FUNCTIONS, output_type=output_type)
            with tracer.start_as_current_span(
                "eval trial", attributes={"openwop.eval.task_id": TASK, "openwop.eval.trial": 0}
            ) as span:
                result = await agent.run(task_input(path))
                if isinstance(result.output, BaseModel):
                    span.set_attribute("output.value", result.output.model_dump_json())
                    span.set_attribute("output.mime_type", "application/json")

    asyncio.run(run())
    out.write_text(MessageToJson(encode_spans(exporter.get_finished_spans())))
    return out


@pytest.fixture
def instrument_all(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Agent.instrument_all`` sets a default for every agent: undone after the test."""
    monkeypatch.setattr(Agent, "_instrument_default", Agent._instrument_default)


@pytest.mark.usefixtures("instrument_all")
@pytest.mark.parametrize(("path", "code"), [("good", 0), ("forbidden", 1)])
def test_a_pydantic_ai_runs_spans_are_graded(
    cli: Invoke, tmp_path: Path, model: FakeEndpoint, path: str, code: int
) -> None:
    graded = grade(cli, tmp_path, pydantic_ai_trace(model, path, tmp_path / "spans.json"))
    assert graded.exit_code == code, graded.stderr
    trial = graded.report["tasks"][0]["trials"][0]
    assert trial["output"] == "Done: refunded."
    calls = trial["calls"]
    assert [c["tool"] for c in calls] == [MAP["tools"][name] for _, name, _ in PATHS[path]]
    assert calls[0]["args"] == {"orderId": "A-1001"}
    assert calls[0]["result"] == RESULTS["lookup_order"]
    if path == "forbidden":
        assert "called forbidden tool accounts:delete" in graded.stdout


@pytest.mark.usefixtures("instrument_all")
def test_pydantic_ais_older_span_format_is_read_too(
    cli: Invoke, tmp_path: Path, model: FakeEndpoint
) -> None:
    """Format version 2: ``running tool`` spans whose arguments and result are
    ``tool_arguments`` and ``tool_response``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PydanticAIDeprecationWarning)  # versions before 5
        traces = pydantic_ai_trace(model, "good", tmp_path / "spans.json", version=2)
    spans = json.loads(traces.read_text())["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert "running tool" in [s["name"] for s in spans]
    graded = grade(cli, tmp_path, traces)
    assert graded.exit_code == 0, graded.stderr
    calls = graded.report["tasks"][0]["trials"][0]["calls"]
    assert [c["result"] for c in calls] == [RESULTS["lookup_order"], RESULTS["issue_refund"]]
    assert [c["args"] for c in calls] == [LOOKUP[2], REFUND[2]]


@pytest.mark.usefixtures("instrument_all")
def test_a_pydantic_ai_structured_output_recorded_on_the_trials_span_is_the_answer(
    cli: Invoke, tmp_path: Path, model: FakeEndpoint
) -> None:
    """Pydantic AI ends the run on its ``final_result`` tool, which no span records as a tool
    call: the answer is what the recipe records on the trial's span."""
    traces = pydantic_ai_trace(model, "structured", tmp_path / "spans.json", output_type=Refund)
    graded = grade(cli, tmp_path, traces)
    assert graded.exit_code == 0, graded.stderr
    trial = graded.report["tasks"][0]["trials"][0]
    assert trial["output"] == {"status": "refunded"}
    assert [c["tool"] for c in trial["calls"]] == ["crm:lookup-order", "payments:refund"]
