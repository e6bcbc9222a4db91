"""A finished run's event log as OpenTelemetry spans, following the GenAI semantic conventions.

One trace per run::

    eval_run {suiteId}                      the suite's verdict, a gen_ai.evaluation.result event
      eval_task {taskId}                    the task's verdict, a gen_ai.evaluation.result event
        invoke_agent {agentId}              one trial, a gen_ai.evaluation.result event
          execute_tool {tool}               one per tool call

Trials are graded as the log is read, by the same reader and tally as every verdict of
this project (:func:`openwop_eval.log.read_verdict`), so each trial's span is made and ended
as soon as its ``eval.scored`` is read; a task's span ends with the run, when its verdict is
known. Spans carry no content (outputs, arguments, results) unless ``content`` is set.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode, Tracer
from opentelemetry.util.types import Attributes

from ..core import JSON, GradingError, Suite, SuiteGrade, SuiteTally, TrialRecord, plan_suite
from ..core.gate import open_gate
from ..core.grading import TrialGrade
from ..core.reasons import Reason
from ..log.event_names import sequence_of
from ..log.reader import LogReader
from ..log.terms import terms_of
from . import names as a
from .log_times import CallTiming, Timings, TrialTiming, nanos

Outputs = Callable[[str, int], JSON]
"""A trial's final output by (task, trial), for content capture (the log does not hold it)."""


class RunSpans:
    """Feed it a run's events in sequence order, then :meth:`finish`."""

    def __init__(
        self, tracer: Tracer, suite: Suite, content: bool, outputs: Outputs | None
    ) -> None:
        self._tracer, self._suite = tracer, suite
        self._content, self._outputs = content, outputs if content else None
        self._reader, self._timings = LogReader(), Timings(content)
        self._tally: SuiteTally | None = None
        self._run: Span | None = None
        self._tasks: dict[str, Span] = {}
        self._last: int | None = None
        self.trials = 0

    def feed(self, doc: dict[str, Any]) -> None:
        """Read the next event; raises :class:`~openwop_eval.log.LogVersionError` on one
        whose payload this version cannot read."""
        at = nanos(doc.get("timestamp"))
        self._last = at if at is not None else self._last
        if self._run is None:
            self._run = self._start_run(doc, at)
        key = self._timings.feed(doc, at)
        scored = self._reader.feed(doc)
        if scored is None:
            return
        if self._tally is None:  # the terms are in eval.started, which comes first
            self._tally = _tally(self._suite, self._reader)
        timing = self._timings.pop(key)
        record = scored.record
        try:
            grade: TrialGrade | None = self._tally.add(record)
        except GradingError:  # a trial the suite has no room for: shown, not graded
            grade = None
        self._trial(record, grade, timing)
        self.trials += 1

    def finish(self) -> None:
        """End every task's span with its verdict, and the run's with the suite's."""
        grade = (self._tally or _tally(self._suite, self._reader)).finish()
        if self._run is None:  # a log with no event: the run still has its verdict
            self._run = self._start_run({}, None)
        run = self._run
        for task in grade.tasks:  # a task none of whose trials ran has its span here
            span = self._tasks.pop(task.task_id, None) or self._task_span(task.task_id, None)
            label = a.PASSED if task.passed else a.FAILED
            span.set_attributes({a.SCORE: task.score, a.GATED_SCORE: task.gated_score})
            _evaluation(span, a.EVAL_TASK, task.gated_score, label, task.reasons, self._last)
            _end(span, self._last, failed=not task.passed)
        for span in self._tasks.values():  # tasks the suite does not have
            _end(span, self._last, failed=True)
        _end_run(run, grade, self._last)

    def _start_run(self, doc: dict[str, Any], at: int | None) -> Span:
        suite = self._suite
        run_id = doc.get("runId")
        attributes: dict[str, Any] = {a.SUITE_ID: suite.suite_id, a.SUITE_VERSION: suite.version}
        if type(run_id) is str:
            attributes[a.RUN_ID] = run_id
        return self._tracer.start_span(
            f"{a.RUN_SPAN} {suite.suite_id}", start_time=at, attributes=attributes
        )

    def _task_span(self, task_id: str, at: int | None) -> Span:
        return self._tracer.start_span(
            f"{a.TASK_SPAN} {task_id}",
            context=trace.set_span_in_context(self._run) if self._run else None,
            start_time=at if at is not None else self._last,
            attributes={a.TASK_ID: task_id},
        )

    def _trial(self, record: TrialRecord, grade: TrialGrade | None, timing: TrialTiming) -> None:
        start = _first(timing.start, timing.scored, self._last)
        parent = self._tasks.get(record.task_id)
        if parent is None:
            parent = self._tasks[record.task_id] = self._task_span(record.task_id, start)
        span = self._tracer.start_span(
            f"{a.INVOKE_AGENT} {timing.agent_id}" if timing.agent_id else a.INVOKE_AGENT,
            context=trace.set_span_in_context(parent),
            start_time=start,
            attributes=_trial_attributes(record, timing),
        )
        context = trace.set_span_in_context(span)
        for call in timing.calls.values():
            self._call(context, call, timing)
        if self._outputs is not None:
            output = self._outputs(record.task_id, record.index)
            if output is not None:
                span.set_attribute(a.OUTPUT_MESSAGES, _output_messages(output))
        failed = grade is None or not grade.passed
        if grade is not None:
            span.set_attributes({a.OUTCOME: grade.outcome, a.SCORE: grade.score})
            span.set_attribute(a.GATED_SCORE, grade.gating)
            label = a.PASSED if grade.passed else a.FAILED
            _evaluation(span, a.EVAL_TRIAL, grade.gating, label, grade.reasons, timing.scored)
        if record.error is not None:
            span.set_attribute(a.ERROR_TYPE, record.error)
        _end(span, _first(timing.end, timing.scored, start), failed=failed)

    def _call(self, context: Any, call: CallTiming, trial: TrialTiming) -> None:
        attributes: dict[str, Any] = {
            a.OPERATION: a.EXECUTE_TOOL,
            a.TOOL_NAME: call.tool,
            a.TOOL_CALL_ID: call.call_id,
        }
        if call.turn is not None:
            attributes[a.TURN] = call.turn
        if call.missed:
            attributes[a.MISS] = True
        if call.error_code is not None:
            attributes[a.ERROR_TYPE] = call.error_code
        if self._content:
            attributes[a.TOOL_ARGUMENTS] = _json_text(call.arguments)
            if call.returned and call.error_code is None:
                attributes[a.TOOL_RESULT] = _json_text(call.result)
        span = self._tracer.start_span(
            f"{a.EXECUTE_TOOL} {call.tool}",
            context=context,
            start_time=call.start,
            attributes=attributes,
        )
        end = _first(call.end, trial.end, call.start)
        _end(span, end, failed=call.missed or call.error_code is not None)


def spans_of_log(
    tracer: Tracer,
    suite: Suite,
    docs: Iterable[dict[str, Any]],
    *,
    content: bool = False,
    outputs: Outputs | None = None,
    ordered: bool = True,
) -> int:
    """Make the spans of the run whose log is ``docs`` (sorted first unless ``ordered``);
    returns how many trials it read."""
    spans = RunSpans(tracer, suite, content, outputs)
    for doc in docs if ordered else sorted(docs, key=sequence_of):
        spans.feed(doc)
    spans.finish()
    return spans.trials


def _tally(suite: Suite, reader: LogReader) -> SuiteTally:
    problems: list[str] = []  # the verdict's reader reports them; spans show the grade
    return SuiteTally(plan_suite(suite, terms_of(reader.started, problems)))


def _end_run(run: Span, grade: SuiteGrade, at: int | None) -> None:
    """The suite's verdict: the gate's (what the exit code says), its reasons the RFC's
    first, then the gate policy's."""
    gate = open_gate(grade)
    run.set_attributes(
        {
            a.RUN_PASSED: grade.passed,
            a.GATE_PASSED: gate.passed,
            a.AGGREGATE: grade.aggregate_score,
            a.GATED_AGGREGATE: grade.gated_aggregate_score,
            a.TASK_COUNT: len(grade.tasks),
            a.PASSED_COUNT: grade.passed_count,
        }
    )
    label = a.PASSED if gate.passed else a.FAILED
    reasons = (*grade.reasons, *gate.reasons)
    _evaluation(run, a.EVAL_SUITE, grade.gated_aggregate_score, label, reasons, at)
    _end(run, at, failed=not gate.passed)


def _trial_attributes(record: TrialRecord, timing: TrialTiming) -> Attributes:
    attributes: dict[str, Any] = {
        a.OPERATION: a.INVOKE_AGENT,
        a.TASK_ID: record.task_id,
        a.TRIAL: record.index,
        a.INVOCATION_ID: timing.invocation_id,
    }
    if timing.agent_id:
        attributes[a.AGENT_ID] = attributes[a.AGENT_NAME] = timing.agent_id
    return attributes


def _evaluation(
    span: Span,
    name: str,
    score: float,
    label: str,
    reasons: Iterable[Reason],
    at: int | None,
) -> None:
    """A ``gen_ai.evaluation.result`` event; its explanation is the first reason's rule, a
    fixed word, never the reason's text (which may quote arguments)."""
    attributes: dict[str, Any] = {
        a.EVALUATION_NAME: name,
        a.SCORE_VALUE: float(score),
        a.SCORE_LABEL: label,
    }
    first = next(iter(reasons), None)
    if first is not None:
        attributes[a.EXPLANATION] = first.rule
    span.add_event(a.EVALUATION_RESULT, attributes, timestamp=at)


def _first(*moments: int | None) -> int | None:
    return next((moment for moment in moments if moment is not None), None)


def _end(span: Span, at: int | None, *, failed: bool) -> None:
    if failed:
        span.set_status(Status(StatusCode.ERROR))
    span.end(end_time=at)


def _json_text(value: JSON) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _output_messages(output: JSON) -> str:
    """The conventions' ``gen_ai.output.messages``: one assistant message, its text part the
    output (JSON text when the output is not a string)."""
    text = output if isinstance(output, str) else _json_text(output)
    part = {"type": "text", "content": text}
    return _json_text([{"role": "assistant", "parts": [part], "finish_reason": "stop"}])
