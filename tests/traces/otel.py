"""Spans written by the OpenTelemetry SDK, exported to OTLP/JSON by the official encoder."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from .scenario import TRIALS, Trial

T0 = 1_700_000_000_000_000_000
MS = 1_000_000


class Recorder:
    """A tracer whose finished spans become one ``ExportTraceServiceRequest`` as JSON."""

    def __init__(self, resource: dict[str, Any] | None = None) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create(resource or {"service.name": "agent"}))
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer("support-agent")

    def span(
        self,
        name: str,
        start: int,
        end: int,
        parent: Any = None,
        attributes: dict[str, Any] | None = None,
        error: str | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> Any:
        """A finished span, a child of ``parent`` (a new trace without one)."""
        context = trace.set_span_in_context(parent) if parent is not None else None
        span = self.tracer.start_span(name, context, kind, attributes=attributes, start_time=start)
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=end)
        return span

    def export(self) -> dict[str, Any]:
        """As protobuf's JSON mapping writes it: ids in base64, int64 as strings."""
        message = encode_spans(self.exporter.get_finished_spans())
        return MessageToDict(message)


def hex_ids(doc: Any) -> Any:
    """The same export with ids in hex, as the OTLP/JSON specification writes them."""
    if isinstance(doc, dict):
        return {
            k: base64.b64decode(v).hex()
            if k in ("traceId", "spanId", "parentSpanId")
            else hex_ids(v)
            for k, v in doc.items()
        }
    if isinstance(doc, list):
        return [hex_ids(v) for v in doc]
    return doc


def gen_ai_trial(
    recorder: Recorder, start: int, task: str | None, index: int, trial: Trial, opt_in: bool
) -> None:
    """One agent run under the GenAI conventions: an ``invoke_agent`` root, a chat span per
    tool call whose output messages hold the call, then its ``execute_tool`` span — whose
    arguments are recorded only when ``opt_in`` (as the opt-in attribute is)."""
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": trial.output}]}]
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.output.messages": json.dumps(answer),
    }
    if task is not None:
        attributes |= {"openwop.eval.task_id": task, "openwop.eval.trial": index}
    if trial.cost_usd is not None:
        attributes["openwop.eval.cost_usd"] = trial.cost_usd
    end = start + int(trial.latency_ms * MS)
    root = recorder.span("invoke_agent support", start, end, None, attributes)
    for i, call in enumerate(trial.calls):
        at = start + 10 * i
        part = {"type": "tool_call", "id": f"call_{i}", "name": call.tool, "arguments": call.args}
        chat = {
            "gen_ai.operation.name": "chat",
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [part]}]),
        }
        recorder.span("chat gpt", at + 1, at + 2, root, chat)
        tool: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.tool,
            "gen_ai.tool.call.id": f"call_{i}",
            "gen_ai.tool.call.result": json.dumps(call.result),
        }
        if opt_in:
            tool["gen_ai.tool.call.arguments"] = json.dumps(call.args)
        recorder.span(f"execute_tool {call.tool}", at + 3, at + 4, root, tool)


def scenario_export(opt_in: Callable[[int], bool] = lambda i: i % 2 == 0) -> dict[str, Any]:
    """Every trial of the scenario, one trace each, with task and trial attributes."""
    recorder = Recorder()
    start, n = T0, 0
    for task, trials in TRIALS.items():
        for index, trial in enumerate(trials):
            gen_ai_trial(recorder, start, task, index, trial, opt_in(n))
            start, n = start + 1000 * MS, n + 1
    return recorder.export()
