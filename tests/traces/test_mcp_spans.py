"""MCP tool calls in OpenTelemetry spans: ``tools/call`` spans are calls, other MCP methods are
not, and one call recorded by several layers (an agent framework, the MCP client, the MCP
server) is one call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.trace import SpanKind

from openwop_eval.traces import read_trace_file
from openwop_eval.traces.otlp import spans_of
from openwop_eval.traces.records import TraceError
from openwop_eval.traces.spans import trace_of

from .conftest import Invoke, assert_same_grade
from .otel import MS, T0, Recorder
from .scenario import TRIALS, Call, Trial
from .test_otlp import calls, read_one, write

SESSION = "8267461134f24305af708e66b8eda71a"
CLIENT, SERVER = SpanKind.CLIENT, SpanKind.SERVER
LOOKUP = Call("lookup-order", {"orderId": "A-1"}, {"status": "delivered"})


def mcp_attributes(call: Call, request: int, execute_tool: bool = True) -> dict[str, Any]:
    """A ``tools/call`` span's attributes as the MCP conventions give them."""
    attributes: dict[str, Any] = {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": call.tool,
        "gen_ai.tool.call.arguments": json.dumps(call.args),
        "gen_ai.tool.call.result": json.dumps(call.result),
        "mcp.session.id": SESSION,
        "mcp.protocol.version": "2025-06-18",
        "jsonrpc.request.id": str(request),
        "network.transport": "pipe",
    }
    if execute_tool:
        attributes["gen_ai.operation.name"] = "execute_tool"
    return attributes


def agent_root(recorder: Recorder, start: int, task: str, index: int, trial: Trial) -> Any:
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": trial.output}]}]
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.output.messages": json.dumps(answer),
        "openwop.eval.task_id": task,
        "openwop.eval.trial": index,
    }
    if trial.cost_usd is not None:
        attributes["openwop.eval.cost_usd"] = trial.cost_usd
    end = start + int(trial.latency_ms * MS)
    return recorder.span("invoke_agent support", start, end, None, attributes)


def session_setup(recorder: Recorder, root: Any, at: int) -> None:
    """``initialize``, ``notifications/initialized`` and ``tools/list``, each seen by the
    client and by the server: none of them is a call."""
    for i, method in enumerate(("initialize", "notifications/initialized", "tools/list")):
        attributes = {"mcp.method.name": method, "mcp.session.id": SESSION}
        client = recorder.span(method, at + 3 * i, at + 3 * i + 2, root, attributes, kind=CLIENT)
        recorder.span(method, at + 3 * i + 1, at + 3 * i + 2, client, attributes, kind=SERVER)


def mcp_trial(
    recorder: Recorder, start: int, task: str, index: int, trial: Trial, shape: str
) -> None:
    """One agent run whose tools are on an MCP server, recorded in one of three shapes:
    ``client`` (only the MCP client's span, no ``gen_ai.operation.name``), ``semconv`` (the
    conventions' example: the client span and the server's span beneath it) and
    ``framework`` (an agent framework's ``execute_tool`` span, without the opt-in arguments
    and result, over the client span over the server span)."""
    root = agent_root(recorder, start, task, index, trial)
    session_setup(recorder, root, start + 1)
    for i, call in enumerate(trial.calls):
        at = start + 100 * (i + 1)
        parent = root
        if shape == "framework":
            framework = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.tool,
                "gen_ai.tool.call.id": f"call_{i}",
            }
            parent = recorder.span(f"execute_tool {call.tool}", at, at + 9, root, framework)
        attributes = mcp_attributes(call, i + 2, execute_tool=shape != "client")
        name = f"tools/call {call.tool}"
        client = recorder.span(name, at + 1, at + 8, parent, attributes, kind=CLIENT)
        if shape != "client":
            recorder.span(name, at + 2, at + 7, client, attributes, kind=SERVER)


@pytest.mark.parametrize("shape", ["client", "semconv", "framework"])
def test_grading_mcp_spans_gives_the_summary_of_the_equivalent_scripted_run(
    cli: Invoke, suite_path: Path, tmp_path: Path, equivalent: Any, shape: str
) -> None:
    recorder = Recorder()
    start = T0
    for task, trials in TRIALS.items():
        for index, trial in enumerate(trials):
            mcp_trial(recorder, start, task, index, trial, shape)
            start += 1000 * MS
    traces = write(tmp_path / "spans.json", recorder.export())
    graded, ran = cli("grade", str(suite_path), traces), equivalent()
    assert_same_grade(graded, ran, cli, suite_path)
    assert calls_made(graded.report) == calls_made(ran.report)  # each call once


def calls_made(report: dict[str, Any]) -> list[list[tuple[str, Any, Any]]]:
    trials = [trial for task in report["tasks"] for trial in task["trials"]]
    return [[(c["tool"], c["args"], c["result"]) for c in t["calls"]] for t in trials]


@pytest.mark.parametrize("shape", ["client", "semconv", "framework"])
def test_each_call_is_read_once_with_its_arguments_and_result(tmp_path: Path, shape: str) -> None:
    recorder = Recorder()
    trial = TRIALS["refund"][1]
    mcp_trial(recorder, T0, "refund", 1, trial, shape)
    trace = read_one(tmp_path / "t.json", recorder.export())
    assert calls(trace) == [(c.tool, c.args, c.result) for c in trial.calls]


def test_spans_of_other_mcp_methods_are_never_calls(tmp_path: Path) -> None:
    recorder = Recorder()
    root = recorder.span("agent", T0, T0 + MS)
    for method in ("tools/list", "initialize", "notifications/tools/list_changed", "ping"):
        # even spelt as a tool span: the MCP method says what the span is
        attributes = {
            "mcp.method.name": method,
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup-order",
        }
        recorder.span(method, T0 + 1, T0 + 2, root, attributes, kind=CLIENT)
    assert read_one(tmp_path / "t.json", recorder.export()).calls == ()


def test_the_tool_is_named_as_the_span_names_it(tmp_path: Path) -> None:
    recorder = Recorder()
    root = recorder.span("agent", T0, T0 + MS)
    attributes = mcp_attributes(LOOKUP, 1, execute_tool=False)
    del attributes["gen_ai.tool.name"]  # conditionally required: the span name has it
    recorder.span("tools/call lookup-order", T0 + 1, T0 + 2, root, attributes, kind=CLIENT)
    trace = read_one(tmp_path / "t.json", recorder.export())
    assert calls(trace) == [("lookup-order", {"orderId": "A-1"}, {"status": "delivered"})]


@pytest.mark.parametrize(
    ("error_type", "status", "served"),
    [
        ("tool_error", None, {"error": "tool_error"}),  # isError: a result, no JSON-RPC error
        ("-32602", "Unknown order A-9", {"error": "Unknown order A-9"}),
        (None, "timeout", {"error": "timeout"}),
    ],
)
def test_a_failed_mcp_call_is_served_its_error(
    tmp_path: Path, error_type: str | None, status: str | None, served: Any
) -> None:
    recorder = Recorder()
    root = recorder.span("agent", T0, T0 + MS)
    attributes = mcp_attributes(LOOKUP, 1)
    del attributes["gen_ai.tool.call.result"]  # recorded only when the call succeeded
    if error_type is not None:
        attributes["error.type"] = error_type
    client = recorder.span(
        "tools/call lookup-order", T0 + 1, T0 + 5, root, attributes, status, CLIENT
    )
    recorder.span("tools/call lookup-order", T0 + 2, T0 + 4, client, attributes, status, SERVER)
    trace = read_one(tmp_path / "t.json", recorder.export())
    assert calls(trace) == [("lookup-order", {"orderId": "A-1"}, served)]


def test_a_framework_span_over_a_failed_mcp_call_is_a_failed_call(tmp_path: Path) -> None:
    recorder = Recorder()
    root = recorder.span("agent", T0, T0 + MS)
    framework = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup-order"}
    outer = recorder.span("execute_tool lookup-order", T0 + 1, T0 + 9, root, framework)
    attributes = mcp_attributes(LOOKUP, 1) | {"error.type": "tool_error"}
    del attributes["gen_ai.tool.call.result"]
    recorder.span("tools/call lookup-order", T0 + 2, T0 + 8, outer, attributes, kind=CLIENT)
    trace = read_one(tmp_path / "t.json", recorder.export())
    assert calls(trace) == [("lookup-order", {"orderId": "A-1"}, {"error": "tool_error"})]


def test_a_server_span_beside_its_client_span_is_not_a_second_call(tmp_path: Path) -> None:
    recorder = Recorder()  # an in-process server: its span takes the agent's context
    root = recorder.span("agent", T0, T0 + MS)
    attributes = mcp_attributes(LOOKUP, 1)
    recorder.span("tools/call lookup-order", T0 + 1, T0 + 5, root, attributes, kind=CLIENT)
    recorder.span("tools/call lookup-order", T0 + 2, T0 + 4, root, attributes, kind=SERVER)
    assert len(read_one(tmp_path / "t.json", recorder.export()).calls) == 1


def test_server_spans_are_the_calls_when_nothing_on_the_client_side_records_them(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    root = recorder.span("agent", T0, T0 + MS)
    second = Call("refund", {"orderId": "A-1"}, {"refunded": True})
    for i, call in enumerate((LOOKUP, second)):
        attributes = mcp_attributes(call, i + 1)
        recorder.span(
            f"tools/call {call.tool}", T0 + 10 * i, T0 + 10 * i + 5, root, attributes, kind=SERVER
        )
    trace = read_one(tmp_path / "t.json", recorder.export())
    assert [c.tool for c in trace.calls] == ["lookup-order", "refund"]


def test_a_framework_tool_over_an_mcp_call_of_another_tool_is_the_frameworks_call(
    tmp_path: Path,
) -> None:
    recorder = Recorder()  # a function tool that calls an MCP server in its body
    root = recorder.span("agent", T0, T0 + MS)
    framework = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "check_order",
        "gen_ai.tool.call.arguments": '{"order": "A-1"}',
    }
    outer = recorder.span("execute_tool check_order", T0 + 1, T0 + 9, root, framework)
    attributes = mcp_attributes(LOOKUP, 1)
    recorder.span("tools/call lookup-order", T0 + 2, T0 + 8, outer, attributes, kind=CLIENT)
    trace = read_one(tmp_path / "t.json", recorder.export())
    assert calls(trace) == [("check_order", {"order": "A-1"}, None)]


def test_an_mcp_call_of_an_agent_a_tool_runs_is_that_agents_own_call(tmp_path: Path) -> None:
    recorder = Recorder()  # an agent used as a tool: its calls are calls, not the tool's body
    root = recorder.span("agent", T0, T0 + MS)
    framework = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "ask_support"}
    outer = recorder.span("execute_tool ask_support", T0 + 1, T0 + 9, root, framework)
    agent = recorder.span(
        "invoke_agent support", T0 + 2, T0 + 8, outer, {"gen_ai.operation.name": "invoke_agent"}
    )
    attributes = mcp_attributes(LOOKUP, 1)
    recorder.span("tools/call lookup-order", T0 + 3, T0 + 7, agent, attributes, kind=CLIENT)
    trace = read_one(tmp_path / "t.json", recorder.export())
    assert [c.tool for c in trace.calls] == ["ask_support", "lookup-order"]


def test_deeply_nested_tool_spans_read_in_one_pass(tmp_path: Path) -> None:
    recorder = Recorder()
    parent = recorder.span("agent", T0, T0 + MS)
    for depth in range(3000):
        attributes = mcp_attributes(LOOKUP, depth)
        parent = recorder.span(
            "tools/call lookup-order", T0 + depth, T0 + MS, parent, attributes, kind=CLIENT
        )
    assert len(read_one(tmp_path / "t.json", recorder.export()).calls) == 1


@pytest.mark.parametrize("kind", ["SPAN_KIND_SIDEWAYS", 9, True, {}])
def test_a_span_kind_that_is_no_kind_is_a_located_problem(tmp_path: Path, kind: Any) -> None:
    recorder = Recorder()
    recorder.span(
        "tools/call lookup-order", T0, T0 + 1, None, mcp_attributes(LOOKUP, 1), kind=CLIENT
    )
    doc = recorder.export()
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["kind"] = kind
    path = tmp_path / "t.json"
    traces, problems = read_trace_file(write(path, doc))
    assert not traces
    assert [str(p) for p in problems] == [
        f"{path} $.resourceSpans[0].scopeSpans[0].spans[0].kind:"
        " not a span kind (0–5, or a name such as SPAN_KIND_CLIENT)"
    ]


def test_span_kinds_as_numbers_read_as_their_names(tmp_path: Path) -> None:
    recorder = Recorder()
    root = recorder.span("agent", T0, T0 + MS)
    attributes = mcp_attributes(LOOKUP, 1)
    recorder.span("tools/call lookup-order", T0 + 1, T0 + 5, root, attributes, kind=CLIENT)
    recorder.span("tools/call lookup-order", T0 + 2, T0 + 4, root, attributes, kind=SERVER)
    doc = recorder.export()
    for span in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["kind"] = {"SPAN_KIND_INTERNAL": 1, "SPAN_KIND_CLIENT": 3, "SPAN_KIND_SERVER": 2}[
            span["kind"]
        ]
    assert len(read_one(tmp_path / "t.json", doc).calls) == 1


VALUES = st.one_of(
    st.sampled_from(["tools/call", "tools/list", "execute_tool", "invoke_agent", "lookup-order"]),
    st.text(max_size=8),
    st.integers(),
    st.booleans(),
    st.lists(st.text(max_size=4), max_size=3),
)
KEYS = st.sampled_from(
    [
        "mcp.method.name",
        "gen_ai.operation.name",
        "gen_ai.tool.name",
        "error.type",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "openinference.span.kind",
    ]
)
SPANS = st.lists(
    st.tuples(
        st.dictionaries(KEYS, VALUES, max_size=4),
        st.sampled_from(list(SpanKind)),
        st.integers(min_value=0, max_value=20),
        st.sampled_from(["tools/call lookup-order", "execute_tool x", "span"]),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(spans=SPANS)
def test_any_mcp_attributes_in_any_nesting_read_or_name_the_span(
    spans: list[tuple[dict[str, Any], SpanKind, int, str]],
) -> None:
    recorder = Recorder()
    made: list[Any] = []
    for attributes, kind, parent, name in spans:
        above = made[parent % len(made)] if made and parent else None
        made.append(recorder.span(name, T0 + len(made), T0 + 99, above, attributes, kind=kind))
    read = spans_of(recorder.export())
    unread = []
    for trace_id in {s.trace_id for s in read}:
        try:
            trace_of([s for s in read if s.trace_id == trace_id], "t")
        except TraceError as exc:  # never anything else
            unread.append(exc.message)
    assert all(message.startswith("span ") for message in unread)
