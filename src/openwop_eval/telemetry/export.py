"""Sending a run's spans to an OTLP/HTTP endpoint, through the OpenTelemetry SDK and its
OTLP exporter (protobuf over HTTP). Where to and what: :mod:`.settings`; the exporter itself
reads ``OTEL_EXPORTER_OTLP_HEADERS``, ``…_TIMEOUT``, ``…_COMPRESSION`` and the certificates.

The spans go out in batches as they end, synchronously: no span is dropped for a full queue
(a background batch processor drops past its queue), memory stays one batch, and the export
is over when :func:`export_run` returns. Once a batch fails (the collector is away, refuses,
or times out past the exporter's retries) the rest are not sent: a failure costs one
timeout, not one per batch. A failure is a result, never an exception.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ..core import Suite
from ..log import LogVersionError
from .settings import OtlpTarget, endpoint_problem
from .spans import Outputs, spans_of_log

BATCH: Final = 512
"""Spans per export request (the SDK batch processor's default)."""
_SCOPE: Final = "openwop_eval.telemetry"
_LOGGER: Final = "opentelemetry"


@dataclass(frozen=True)
class ExportResult:
    """What an export did: the trials read, the spans sent and not sent, and why not."""

    trials: int
    sent: int
    failed: int
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.failed == 0


def export_run(
    target: OtlpTarget,
    suite: Suite,
    docs: Iterable[dict[str, Any]],
    *,
    outputs: Outputs | None = None,
    ordered: bool = True,
    exporter: SpanExporter | None = None,
) -> ExportResult:
    """Export the run of ``suite`` whose event log is ``docs`` to ``target`` (through
    ``exporter`` when given, else the OTLP/HTTP one); ``outputs`` gives each trial's final
    output, used only when the target captures content."""
    problem = endpoint_problem(target.endpoint)
    if problem is not None:
        return ExportResult(0, 0, 0, problem)
    watched = _Watched(exporter or OTLPSpanExporter(endpoint=target.endpoint))
    processor = _SyncBatch(watched)
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: target.service_name}))
    provider.add_span_processor(processor)
    tracer = provider.get_tracer(_SCOPE)
    trials, error = 0, None
    with _first_error() as logged:
        try:
            trials = spans_of_log(
                tracer, suite, docs, content=target.content, outputs=outputs, ordered=ordered
            )
        except LogVersionError as exc:
            error = str(exc)
        finally:
            provider.shutdown()  # exports what is left, then closes the exporter
    if watched.failed and error is None:
        error = logged[0] if logged else "the endpoint did not accept the spans"
    return ExportResult(trials, watched.sent, watched.failed, error)


class _Watched(SpanExporter):
    """An exporter that counts what it sent and, past its first failure, sends nothing."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.sent = 0
        self.failed = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self.failed:
            self.failed += len(spans)
            return SpanExportResult.FAILURE
        result = self.inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            self.sent += len(spans)
        else:
            self.failed += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


class _SyncBatch(SpanProcessor):
    """Ended spans exported :data:`BATCH` at a time, in the caller's thread."""

    def __init__(self, exporter: SpanExporter) -> None:
        self._exporter = exporter
        self._batch: list[ReadableSpan] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        self._batch.append(span)
        if len(self._batch) >= BATCH:
            self._flush()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        self._flush()
        return True

    def shutdown(self) -> None:
        self._flush()
        self._exporter.shutdown()

    def _flush(self) -> None:
        if self._batch:
            batch, self._batch = self._batch, []
            self._exporter.export(batch)


class _FirstError(logging.Handler):
    def __init__(self, kept: list[str]) -> None:
        super().__init__(logging.ERROR)
        self.kept = kept

    def emit(self, record: logging.LogRecord) -> None:
        if not self.kept:
            self.kept.append(record.getMessage()[:300])


@contextmanager
def _first_error() -> Iterator[list[str]]:
    """The SDK's first error message while exporting, for the warning that reports it; its
    log lines are not printed besides (a handler is present, so Python's last resort one
    stays silent; an application's own logging still gets them)."""
    kept: list[str] = []
    handler = _FirstError(kept)
    logger = logging.getLogger(_LOGGER)
    logger.addHandler(handler)
    try:
        yield kept
    finally:
        logger.removeHandler(handler)
