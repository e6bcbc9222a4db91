"""``run --otlp-endpoint URL``: the decided run's traces to an OpenTelemetry collector.

The export reads the run back from the store (its suite and its event log), so it shows
exactly what the log records. It happens after the run is decided and can never change the
verdict or the exit code: whatever goes wrong is one warning on stderr.
"""

from __future__ import annotations

import os

import click
from rich.console import Console
from rich.markup import escape

from ..store import Store
from ..telemetry import endpoint_problem, otlp_target
from ..telemetry.stored import export_stored_run

otlp_option = click.option(
    "--otlp-endpoint",
    metavar="URL",
    callback=lambda _ctx, _param, value: _checked(value),
    help="Export the run as OpenTelemetry traces (OTLP/HTTP) to this base URL, e.g."
    " http://localhost:4318 (default: $OTEL_EXPORTER_OTLP_ENDPOINT); see docs/observability.md.",
)


def _checked(value: str | None) -> str | None:
    problem = endpoint_problem(value) if value else None
    if problem is not None:
        raise click.BadParameter(problem)
    return value


def export_traces(err: Console, endpoint: str | None, store: Store, run_id: str) -> None:
    """Export run ``run_id`` when ``--otlp-endpoint`` or the environment names an endpoint;
    report how it went on ``err``."""
    target = otlp_target(endpoint, os.environ)
    if target is None:
        return
    exported = export_stored_run(target, store, run_id)
    if exported.error is not None:
        err.print(
            f"[yellow]warning:[/yellow] the run's traces were not exported to"
            f" {escape(target.endpoint)}: {escape(exported.error)} (the verdict and exit code"
            " stand)",
            highlight=False,
        )
    else:
        err.print(
            f"traces: {exported.trials} trial(s) of run {escape(run_id)} exported to"
            f" {escape(target.endpoint)}",
            highlight=False,
        )
