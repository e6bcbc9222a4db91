"""The export's settings, and spans from a log that is not this project's own clean one:
the real SDK's in-memory exporter reads back what would be sent."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from openwop_eval.core import Suite
from openwop_eval.files.suites import parse_suite
from openwop_eval.telemetry import OtlpTarget, otlp_target, traces_url
from openwop_eval.telemetry.export import BATCH, export_run
from openwop_eval.telemetry.log_times import nanos
from tests.helpers import golden, suite_doc

TARGET = OtlpTarget("http://127.0.0.1:4318/v1/traces")


@pytest.mark.parametrize(
    ("flag", "environ", "expected"),
    [
        (None, {}, None),
        ("http://c:4318", {}, OtlpTarget("http://c:4318/v1/traces")),
        ("http://c:4318/v1/traces/", {}, OtlpTarget("http://c:4318/v1/traces")),
        (
            "http://flag:4318",
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318", "OTEL_SERVICE_NAME": "evals"},
            OtlpTarget("http://flag:4318/v1/traces", "evals"),
        ),
        (
            None,
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://env/otel/"},
            OtlpTarget("https://env/otel/v1/traces"),
        ),
        (
            None,
            {
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:4318/custom",
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318",
            },
            OtlpTarget("http://t:4318/custom"),
        ),
        (
            "http://c",
            {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "TRUE "},
            OtlpTarget("http://c/v1/traces", content=True),
        ),
        (
            "http://c",
            {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "1"},
            OtlpTarget("http://c/v1/traces", content=False),
        ),
    ],
)
def test_the_target_follows_the_standard_settings(
    flag: str | None, environ: dict[str, str], expected: OtlpTarget | None
) -> None:
    assert otlp_target(flag, environ) == expected


def test_a_traces_url_is_kept() -> None:
    assert traces_url("http://c:4318/v1/traces") == "http://c:4318/v1/traces"


def test_timestamps_read_to_the_nanosecond() -> None:
    assert nanos("1970-01-01T00:00:01.000002Z") == 1_000_002_000
    assert nanos("1970-01-01T01:00:00+01:00") == 0
    assert nanos("yesterday") is None
    assert nanos(12) is None


def _suite(count: int = 1) -> Suite:
    return parse_suite(suite_doc(golden("a"), trials={"count": count})).suite


def _trial(trial: int, at: str, task: str = "a", score: float = 1.0) -> list[dict[str, Any]]:
    ext = {"x-openwop-eval": {"taskId": task, "trial": trial, "invocationId": f"i{trial}"}}
    started = {"invocationId": f"i{trial}", "agentId": "bot", **ext}
    called = {"toolName": "crm:lookup", "callId": f"i{trial}.c1", "inputs": {}, **ext}
    scored = {"taskId": task, "score": score, "passed": score == 1.0, **ext}
    return [
        {"type": "agent.invocation-started", "payload": started, "timestamp": at},
        {"type": "agent.tool-called", "payload": called, "timestamp": at},
        {"type": "eval.scored", "payload": scored, "timestamp": at},
    ]


def test_a_hostile_log_exports_without_an_error() -> None:
    docs = [
        {"type": "run.started", "runId": ["not", "a", "string"], "timestamp": "garbage"},
        *_trial(0, "2026-01-01T00:00:00Z"),
        *_trial(0, "2026-01-01T00:00:01Z", task="no-such-task"),  # graded nowhere
        "not an event",
        {"type": "agent.tool-returned", "payload": "not an object"},
    ]
    memory = InMemorySpanExporter()
    result = export_run(TARGET, _suite(), [d for d in docs if isinstance(d, dict)], exporter=memory)
    assert result.ok, result
    spans = {s.name: s for s in memory.get_finished_spans()}
    assert result.sent == len(memory.get_finished_spans()) == 7
    assert set(spans) == {
        "eval_run test.openwop.evals.unit",
        "eval_task a",
        "eval_task no-such-task",
        "invoke_agent bot",
        "execute_tool crm:lookup",
    }
    unknown = next(
        s
        for s in memory.get_finished_spans()
        if s.name == "invoke_agent bot" and s.attributes["openwop_eval.task.id"] == "no-such-task"
    )
    assert not unknown.events  # not graded, so no verdict
    assert "openwop_eval.run.id" not in spans["eval_run test.openwop.evals.unit"].attributes


def test_a_call_that_never_returned_ends_with_its_trial() -> None:
    docs = _trial(0, "2026-01-01T00:00:00Z")
    docs.insert(
        2, {**docs[0], "type": "agent.invocation-completed", "timestamp": "2026-01-01T00:00:02Z"}
    )
    memory = InMemorySpanExporter()
    export_run(TARGET, _suite(), docs, exporter=memory)
    (tool,) = [s for s in memory.get_finished_spans() if s.name.startswith("execute_tool")]
    assert tool.end_time == nanos("2026-01-01T00:00:02Z")
    assert tool.status.is_ok


def test_spans_go_out_in_batches_and_none_is_dropped() -> None:
    count = BATCH  # trials: each is two spans, so several batches
    docs = [doc for i in range(count) for doc in _trial(i, "2026-01-01T00:00:00Z")]
    memory = InMemorySpanExporter()
    result = export_run(TARGET, _suite(count), docs, exporter=memory)
    assert result.trials == count
    assert result.sent == len(memory.get_finished_spans()) == 2 * count + 2


class _Refusing(InMemorySpanExporter):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def export(self, spans: Any) -> SpanExportResult:
        self.calls += 1
        return SpanExportResult.FAILURE


def test_after_a_failed_batch_nothing_more_is_sent() -> None:
    docs = [doc for i in range(BATCH) for doc in _trial(i, "2026-01-01T00:00:00Z")]
    refusing = _Refusing()
    result = export_run(TARGET, _suite(BATCH), docs, exporter=refusing)
    assert refusing.calls == 1
    assert (result.sent, result.failed) == (0, 2 * BATCH + 2)
    assert result.error == "the endpoint did not accept the spans"
    assert not result.ok


def test_a_log_of_a_newer_version_is_an_error_not_an_exception() -> None:
    docs = [{"type": "eval.started", "schemaVersion": 99, "payload": {}}]
    result = export_run(TARGET, _suite(), docs, exporter=InMemorySpanExporter())
    assert result.error is not None
    assert "99" in result.error


def test_a_task_that_never_ran_has_its_span_and_failed_verdict() -> None:
    suite = parse_suite(suite_doc(golden("a"), golden("never"))).suite
    memory = InMemorySpanExporter()
    export_run(TARGET, suite, _trial(0, "2026-01-01T00:00:00Z"), exporter=memory)
    spans = {s.name: s for s in memory.get_finished_spans()}
    assert len(spans) == len(memory.get_finished_spans()) == 5  # each span ended once
    never = spans["eval_task never"]
    assert never.parent is not None
    assert never.parent.span_id == spans["eval_run test.openwop.evals.unit"].context.span_id
    (event,) = never.events
    assert dict(event.attributes or {}) == {
        "gen_ai.evaluation.name": "openwop_eval.task",
        "gen_ai.evaluation.score.value": 0.0,
        "gen_ai.evaluation.score.label": "failed",
        "gen_ai.evaluation.explanation": "task-below-bar",
    }
    run_event = spans["eval_run test.openwop.evals.unit"].events[0]
    assert run_event.attributes is not None
    assert run_event.attributes["gen_ai.evaluation.score.value"] == 0.5


def test_an_empty_log_still_gives_the_runs_verdict_under_one_root() -> None:
    memory = InMemorySpanExporter()
    result = export_run(TARGET, _suite(), [], exporter=memory)
    assert result.trials == 0
    roots = [s for s in memory.get_finished_spans() if s.parent is None]
    assert [s.name for s in roots] == ["eval_run test.openwop.evals.unit"]
    assert len(memory.get_finished_spans()) == 2
