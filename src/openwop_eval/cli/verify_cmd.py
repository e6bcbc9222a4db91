"""``openwop-eval verify``: recompute a run's summary from its event log and compare."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from ..core import GradingError, Suite, SuiteError
from ..core.gate import GateVerdict, named
from ..files.suites import load_suite
from ..log import verify_log
from ..log.audit import Verification
from ..log.jsonl import OutOfOrderError
from ..log.replay import conversations, replay
from ..reports.html import render_report, report_data
from ..reports.html.page_data import log_diagnostics
from ..reports.model import build_report
from ..reports.terminal import print_problems
from ..runner.events import read_jsonl, stream_jsonl
from .codes import EXIT_FAILED, EXIT_INVALID, EXIT_OK
from .shell import write_file


@click.command()
@click.argument("suite", type=click.Path(dir_okay=False))
@click.argument("events", type=click.Path(dir_okay=False))
@click.option(
    "--summary",
    "summary_path",
    type=click.Path(dir_okay=False),
    help="A summary to check against the recomputation.",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False),
    help="Write the HTML report of the recomputation (the log's calls; no outputs).",
)
def verify(suite: str, events: str, summary_path: str | None, html_path: str | None) -> None:
    """Recompute the EvalSummary of SUITE from the EVENTS log (JSON lines) and print it.

    With --summary, exit 1 and name every field where the given summary disagrees; exit 0 when
    it agrees. Contradictions inside the log itself are reported as well.
    """
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        loaded = load_suite(suite)
        given = json.loads(Path(summary_path).read_text("utf-8")) if summary_path else None
        result = _verify(loaded.suite, events, given, keep_trials=bool(html_path))
    except SuiteError as exc:
        print_problems(err, suite, exc.problems)
        sys.exit(EXIT_INVALID)
    except (OSError, ValueError, GradingError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        sys.exit(EXIT_INVALID)
    if html_path:
        _write_html(html_path, read_jsonl(events), result)
    click.echo(json.dumps(result.summary, indent=2))
    _say_gate(err, result.gate)
    for problem in result.log_problems:
        err.print(f"[yellow]log:[/yellow] {problem}")
    if given is None:
        sys.exit(EXIT_OK)
    if result.agrees:
        err.print(f"[green]✓[/green] {summary_path} agrees with the event log")
        sys.exit(EXIT_OK)
    for mismatch in result.mismatches:
        err.print(f"[red]✗[/red] {mismatch}")
    err.print(
        f"[red]{len(result.mismatches)} field(s) of {summary_path} disagree with the log[/red]"
    )
    sys.exit(EXIT_FAILED)


def _say_gate(err: Console, gate: GateVerdict) -> None:
    """The gate the log bears out: open or shut, and why (the RFC's reasons are the summary's)."""
    failed = gate.failed_tasks
    said = "PASSED" if gate.passed else "NOT PASSED"
    if gate.passed and failed:
        said += f" — {len(failed)} task(s) failed: {named(failed)}"
    shut = "; ".join(str(reason) for reason in gate.reasons)
    err.print(f"gate: {escape(said)}" + (f" ({escape(shut)})" if shut else ""))


def _verify(
    suite: Suite, events: str, given: dict[str, Any] | None, keep_trials: bool
) -> Verification:
    """Read the log as a stream (memory bounded by the trials in flight); a log whose events
    are out of sequence order is read whole and sorted instead."""
    try:
        return verify_log(suite, stream_jsonl(events), given, ordered=True, keep_trials=keep_trials)
    except OutOfOrderError:
        return verify_log(suite, read_jsonl(events), given, keep_trials=keep_trials)


def _write_html(path: str, docs: list[dict[str, Any]], result: Verification) -> None:
    """The report of the recomputed grade; the log has each trial's calls, not its output."""
    run_id = str(docs[0].get("runId", "")) if docs else ""
    diagnostics = log_diagnostics(replay(docs).records, conversations(docs))
    report = build_report(run_id, "", result.grade, result.summary, diagnostics)
    write_file(path, render_report(report_data(report)))
