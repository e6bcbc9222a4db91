"""OTLP/JSON exports of spans the OpenTelemetry SDK recorded, in every common spelling."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openwop_eval.traces import Trace, read_trace_file

from .conftest import Invoke, assert_same_grade
from .otel import MS, T0, Recorder, gen_ai_trial, hex_ids, scenario_export
from .scenario import TRIALS


def write(path: Path, doc: Any) -> str:
    path.write_text(json.dumps(doc))
    return str(path)


def read_one(path: Path, doc: Any) -> Trace:
    traces, problems = read_trace_file(write(path, doc))
    assert not problems, [str(p) for p in problems]
    (only,) = traces
    return only


def calls(trace: Trace) -> list[tuple[str, Any, Any]]:
    return [(c.tool, c.args, c.served) for c in trace.calls]


def test_grading_otlp_spans_gives_the_summary_of_the_equivalent_scripted_run(
    cli: Invoke, suite_path: Path, tmp_path: Path, equivalent: Any
) -> None:
    traces = write(tmp_path / "spans.json", scenario_export())
    assert_same_grade(cli("grade", str(suite_path), traces), equivalent(), cli, suite_path)


def test_ids_in_hex_as_the_otlp_json_encoding_writes_them_read_the_same(tmp_path: Path) -> None:
    doc = scenario_export()
    as_base64, _ = read_trace_file(write(tmp_path / "b64.json", doc))
    as_hex, _ = read_trace_file(write(tmp_path / "hex.json", hex_ids(doc)))
    assert [(t.keys, t.calls, t.output) for t in as_base64] == [
        (t.keys, t.calls, t.output) for t in as_hex
    ]
    assert all(len(t.keys[0]) == 32 for t in as_hex)


def test_opt_in_arguments_absent_are_recovered_from_the_chat_spans_tool_call_parts(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    gen_ai_trial(recorder, T0, "refund", 1, TRIALS["refund"][1], opt_in=False)
    trace = read_one(tmp_path / "t.json", recorder.export())
    assert calls(trace) == [(c.tool, c.args, c.result) for c in TRIALS["refund"][1].calls]
    assert (trace.task_id, trace.trial, trace.output) == ("refund", 1, "Order A-1 was refunded.")
    assert trace.latency_ms == 80.0
    assert trace.cost_usd == 0.02


def test_tool_spans_are_ordered_by_start_time_not_by_export_order(tmp_path: Path) -> None:
    recorder = Recorder()
    root = recorder.span("agent", T0, T0 + 100 * MS)
    recorder.span("execute_tool b", T0 + 50, T0 + 60, root, {"gen_ai.tool.name": "b"})
    recorder.span("execute_tool a", T0 + 10, T0 + 90, root, {"gen_ai.tool.name": "a"})
    assert [c.tool for c in read_one(tmp_path / "t.json", recorder.export()).calls] == ["a", "b"]


def test_openinference_tool_spans_and_root_output(tmp_path: Path) -> None:
    recorder = Recorder()
    root = recorder.span(
        "agent",
        T0,
        T0 + 5 * MS,
        attributes={
            "openinference.span.kind": "CHAIN",
            "openwop.eval.task_id": "status",
            "output.value": "shipped",
        },
    )
    tool = {
        "openinference.span.kind": "TOOL",
        "tool.name": "crm_lookup",
        "input.value": '{"orderId": "B-2"}',
        "output.value": '{"status": "shipped"}',
    }
    recorder.span("crm_lookup", T0 + 1, T0 + 2, root, tool)
    trace = read_one(tmp_path / "t.json", recorder.export())
    assert calls(trace) == [("crm_lookup", {"orderId": "B-2"}, {"status": "shipped"})]
    assert (trace.task_id, trace.trial, trace.output) == ("status", None, "shipped")


def test_openinference_flattened_llm_tool_calls_give_missing_arguments(tmp_path: Path) -> None:
    recorder = Recorder()
    root = recorder.span("agent", T0, T0 + 5 * MS, None, {"openinference.span.kind": "AGENT"})
    flat = "llm.output_messages.0.message.tool_calls.0.tool_call."
    llm = {
        "openinference.span.kind": "LLM",
        f"{flat}id": "c1",
        f"{flat}function.arguments": '{"q": 1}',
        "llm.output_messages.1.message.content": "final",
    }
    recorder.span("llm", T0 + 1, T0 + 2, root, llm)
    tool = {"openinference.span.kind": "TOOL", "tool.name": "search", "tool_call.id": "c1"}
    recorder.span("tool", T0 + 3, T0 + 4, root, tool)
    trace = read_one(tmp_path / "t.json", recorder.export())
    assert calls(trace) == [("search", {"q": 1}, None)]
    assert trace.output == "final"  # no output on the root or agent span: the last LLM span's


def test_vercel_ai_sdk_tool_spans(tmp_path: Path) -> None:
    recorder = Recorder()
    root = recorder.span("ai.generateText", T0, T0 + MS, None, {"ai.response.text": "done"})
    tool = {
        "ai.toolCall.name": "crm_lookup",
        "ai.toolCall.id": "t1",
        "ai.toolCall.args": '{"orderId": "A-1"}',
        "ai.toolCall.result": '{"ok": true}',
    }
    recorder.span("ai.toolCall", T0 + 1, T0 + 2, root, tool)
    trace = read_one(tmp_path / "t.json", recorder.export())
    assert calls(trace) == [("crm_lookup", {"orderId": "A-1"}, {"ok": True})]
    assert trace.output == "done"


def test_google_adk_tool_spans(tmp_path: Path) -> None:
    recorder = Recorder()
    root = recorder.span("invocation", T0, T0 + MS)
    tool = {  # the tool's name only in the span's name
        "gen_ai.operation.name": "execute_tool",
        "gcp.vertex.agent.tool_call_args": '{"orderId": "A-1"}',
        "gcp.vertex.agent.tool_response": '{"status": "delivered"}',
    }
    recorder.span("execute_tool crm_lookup", T0 + 1, T0 + 2, root, tool)
    trace = read_one(tmp_path / "t.json", recorder.export())
    assert calls(trace) == [("crm_lookup", {"orderId": "A-1"}, {"status": "delivered"})]


def test_a_failed_tool_is_served_its_error_and_a_failed_root_errors_the_trial(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    root = recorder.span("agent", T0, T0 + MS, error="ValueError: boom")
    tool = {"gen_ai.tool.name": "crm_lookup"}
    recorder.span("execute_tool crm_lookup", T0 + 1, T0 + 2, root, tool, error="timeout")
    trace = read_one(tmp_path / "t.json", recorder.export())
    assert calls(trace) == [("crm_lookup", {}, {"error": "timeout"})]
    assert trace.error == "the root span ended in error: ValueError: boom"


def test_collector_json_lines_one_request_per_line_and_a_trace_across_lines(
    tmp_path: Path,
) -> None:
    first, second = Recorder(), Recorder()
    root = first.span("agent", T0, T0 + MS, None, {"openwop.eval.task_id": "status"})
    # a child exported by another process, in a later batch
    second.span("execute_tool x", T0 + 1, T0 + 2, root, {"gen_ai.tool.name": "x"})
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(first.export()) + "\n" + json.dumps(second.export()) + "\n")
    (trace,), problems = read_trace_file(str(path))
    assert not problems
    assert (trace.task_id, [c.tool for c in trace.calls]) == ("status", ["x"])


def test_without_task_attributes_a_trace_is_keyed_by_its_trace_id(
    cli: Invoke, suite_path: Path, tmp_path: Path
) -> None:
    recorder = Recorder()
    gen_ai_trial(recorder, T0, None, 0, TRIALS["status"][0], opt_in=True)
    doc = recorder.export()
    trace = read_one(tmp_path / "t.json", doc)
    assert trace.task_id is None
    unmapped = cli("grade", str(suite_path), str(tmp_path / "t.json"))
    assert unmapped.exit_code == 2
    assert f"give {trace.keys[0]!r} an entry in --map" in unmapped.stderr
    mapping = write(tmp_path / "map.json", {"traces": {trace.keys[0]: {"taskId": "status"}}})
    graded = cli("grade", str(suite_path), str(tmp_path / "t.json"), "--map", mapping)
    assert graded.exit_code == 1
    (status,) = [t for t in graded.report["tasks"] if t["taskId"] == "status"]
    assert [t["outcome"] for t in status["trials"]][:1] == ["passed"]


def test_a_span_that_cannot_be_read_is_a_located_problem(tmp_path: Path) -> None:
    doc = scenario_export()
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["traceId"] = "not an id"
    _, problems = read_trace_file(write(tmp_path / "t.json", doc))
    assert [str(p) for p in problems] == [
        f"{tmp_path / 't.json'} $.resourceSpans[0].scopeSpans[0].spans[2].traceId:"
        " not a 16-byte id in hex or base64"
    ]
