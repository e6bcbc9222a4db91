"""``run --otlp-endpoint URL``: the decided run's traces to an OpenTelemetry collector.

The export reads the run back from the store (its suite and its event log), so it shows
exactly what the log records. It happens after the run is decided and can never change the
verdict or the exit code: whatever goes wrong is one warning on stderr.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import click
from rich.console import Console
from rich.markup import escape

from ..core import JSON
from ..files.suites import parse_suite
from ..store import Store
from ..telemetry import OtlpTarget, endpoint_problem, otlp_target

_EXTRA = "'openwop-eval[otlp]'"

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
    try:
        failure, trials = _export(target, store, run_id)
    except ImportError:
        _warn(err, target, f"the OpenTelemetry exporter is not installed: pip install {_EXTRA}")
    except Exception as exc:  # an export never changes the verdict
        lines = str(exc).splitlines()
        _warn(err, target, f"{type(exc).__name__}: {lines[0][:300] if lines else ''}")
    else:
        if failure is not None:
            _warn(err, target, failure)
        else:
            err.print(
                f"traces: {trials} trial(s) of run {escape(run_id)} exported to"
                f" {escape(target.endpoint)}",
                highlight=False,
            )


def _export(target: OtlpTarget, store: Store, run_id: str) -> tuple[str | None, int]:
    """(why the export failed or None, the trials exported)."""
    from ..telemetry.export import export_run  # OpenTelemetry loads only when exporting

    run = store.get_run(run_id)
    if run is None:
        return f"no run {run_id!r} in the store", 0
    suite = parse_suite(run.suite_doc, source=f"run {run_id}").suite
    outputs = _outputs(store, run_id) if target.content else None
    result = export_run(target, suite, store.iter_events(run_id), outputs=outputs)
    return (None if result.ok else result.error or "not every span was sent"), result.trials


def _outputs(store: Store, run_id: str) -> Callable[[str, int], JSON]:
    """The trials' final outputs, kept by the store beside the log (content: opt-in only)."""
    diagnostics = store.trial_results(run_id)

    def output(task_id: str, trial: int) -> JSON:
        return diagnostics.get((task_id, trial), {}).get("output")

    return output


def _warn(err: Console, target: OtlpTarget, why: str) -> None:
    err.print(
        f"[yellow]warning:[/yellow] the run's traces were not exported to"
        f" {escape(target.endpoint)}: {escape(why)} (the verdict and exit code stand)",
        highlight=False,
    )
