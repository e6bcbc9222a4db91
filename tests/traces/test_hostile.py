"""Hostile trace files are normal input: every one is a located problem, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openwop_eval.base import limits
from openwop_eval.traces import read_trace_file
from openwop_eval.traces.records import parse_arguments

from .conftest import Invoke
from .otel import scenario_export


def problems_of(path: Path) -> list[str]:
    traces, problems = read_trace_file(str(path))
    assert not traces
    return [str(p) for p in problems]


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("deep.json", "[" * 100_000, "nested more than 64 levels deep (the limit)"),
        ("empty.jsonl", "\n\n", "the file is empty"),
        ("nan.json", '{"taskId": "x", "messages": [], "latencyMs": NaN}', "not valid JSON"),
        ("big.json", '{"taskId": "x", "messages": [], "trial": 1' + "0" * 30 + "}", "2^53"),
        ("number.json", "42", "not a trace file"),
        ("messages.json", '{"taskId": "x", "messages": {}}', "Input should be a valid list"),
    ],
)
def test_documents_past_a_limit_or_not_json_data_are_located_problems(
    tmp_path: Path, name: str, content: str, expected: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    (problem,) = problems_of(path)
    assert problem.startswith(str(path))
    assert expected in problem


def test_a_broken_line_is_named_by_its_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"taskId": "x", "messages": []}\n\n{"taskId": \n')
    assert problems_of(path) == [f"{path}:3: not valid JSON: Expecting value"]


def test_a_line_separator_inside_a_json_string_does_not_split_the_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    record = {"taskId": "x", "messages": [{"role": "assistant", "content": "a\u2028b"}]}
    path.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    (trace,), problems = read_trace_file(str(path))
    assert (trace.output, problems) == ("a\u2028b", [])


def test_text_that_is_not_utf8_is_named_by_its_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": "\xff"}\n')
    assert problems_of(path) == [f"{path}:2: not valid UTF-8: byte 0xff"]


def test_a_file_over_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with open(path, "wb") as handle:
        handle.truncate(limits.MAX_FILE_BYTES + 1)  # sparse: nothing is written
    (problem,) = problems_of(path)
    assert "the limit is 16,777,216 bytes (16 MiB)" in problem


def test_a_missing_file_is_a_problem(tmp_path: Path) -> None:
    (problem,) = problems_of(tmp_path / "absent.jsonl")
    assert "cannot read the file" in problem


def test_every_broken_line_is_listed_up_to_a_bound(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("x\n" * 5000)
    problems = problems_of(path)
    assert len(problems) == limits.MAX_JSON_PROBLEMS + 1
    assert problems[-1] == f"{path}:1000: too many problems; reading stopped"


def test_deep_or_huge_argument_text_is_kept_raw_not_decoded() -> None:
    deep = "[" * 10_000
    assert parse_arguments(deep) == {"$raw": deep}
    assert parse_arguments('{"n": 1' + "0" * 5000 + "}")["$raw"].startswith('{"n": 1')
    assert parse_arguments('{"n": NaN}') == {"$raw": '{"n": NaN}'}


def test_span_attributes_that_are_no_anyvalue_or_no_integer_are_located(tmp_path: Path) -> None:
    doc = scenario_export()
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["attributes"].append({"key": "k", "value": {"weirdValue": 1}})
    index = len(span["attributes"]) - 1
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    (problem,) = problems_of(path)
    assert problem.endswith(
        f"$.resourceSpans[0].scopeSpans[0].spans[0].attributes[{index}].value:"
        " unknown AnyValue member 'weirdValue'"
    )
    span["attributes"][-1] = {"key": "openwop.eval.trial", "value": {"intValue": "9" * 5000}}
    path.write_text(json.dumps(doc))
    assert "not an integer" in problems_of(path)[0]


def test_spans_whose_parents_form_a_cycle_still_read(tmp_path: Path) -> None:
    doc = scenario_export()
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    trace_id = spans[0]["traceId"]
    mine = [s for s in spans if s["traceId"] == trace_id]
    for span, parent in zip(mine, mine[1:] + mine[:1], strict=True):
        span["parentSpanId"] = parent["spanId"]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    traces, problems = read_trace_file(str(path))
    assert not problems
    assert len(traces) == 4


def test_the_command_prints_a_bounded_list_and_exits_2(
    cli: Invoke, suite_path: Path, tmp_path: Path
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("x\n" * 200)
    graded = cli("grade", str(suite_path), str(path))
    assert graded.exit_code == 2
    assert "… and 150 more problems" in graded.stderr
    assert "200 problems; nothing was graded" in graded.stderr


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)
KEYS = st.sampled_from(
    [
        "role",
        "type",
        "tool_calls",
        "function",
        "name",
        "arguments",
        "id",
        "tool_call_id",
        "call_id",
        "content",
        "output",
        "resourceSpans",
        "scopeSpans",
        "spans",
        "attributes",
        "key",
        "value",
        "stringValue",
        "arrayValue",
        "kvlistValue",
        "values",
        "traceId",
        "spanId",
    ]
)
SHAPED = st.recursive(
    JSON_VALUES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=40,
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=SHAPED, wrap=st.sampled_from(["messages", "items", "bare", "otlp"]))
def test_any_json_in_any_shape_reads_or_is_a_problem(tmp_path: Path, body: Any, wrap: str) -> None:
    doc: Any = {
        "messages": {"taskId": "t", "messages": body},
        "items": {"taskId": "t", "items": body},
        "bare": body,
        "otlp": {"resourceSpans": body},
    }[wrap]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    _, problems = read_trace_file(str(path))  # never raises
    assert all(str(p).startswith(str(path)) for p in problems)
