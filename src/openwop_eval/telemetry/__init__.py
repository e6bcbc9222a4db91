"""OpenTelemetry out: a run's event log as spans, exported over OTLP/HTTP.

A run is one trace: the run, its tasks, each trial as an ``invoke_agent`` span with an
``execute_tool`` child per tool call, and the verdicts as ``gen_ai.evaluation.result``
events, following the OpenTelemetry GenAI semantic conventions (docs/observability.md).
Built from the log alone, so a finished run and a stored one export the same way.

This package's front imports nothing of OpenTelemetry (the settings only); the export is
:func:`openwop_eval.telemetry.export.export_run`, the spans
:func:`openwop_eval.telemetry.spans.spans_of_log`, which need ``openwop-eval[otlp]``.
"""

from .names import CAPTURE_CONTENT
from .settings import DEFAULT_SERVICE, OtlpTarget, endpoint_problem, otlp_target, traces_url

__all__ = [
    "CAPTURE_CONTENT",
    "DEFAULT_SERVICE",
    "OtlpTarget",
    "endpoint_problem",
    "otlp_target",
    "traces_url",
]
