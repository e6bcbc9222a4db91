"""``openwop-eval compare``: two runs of one suite, task by task, on the gated values.

Each side is a run id in the store, a ``.json`` file (a summary or our JSON report) or a
``.jsonl`` event log (the summary of its ``run.completed``); the analysis is the one
:mod:`openwop_eval.compare` call, and the regression rule is its ``regression_reasons``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table

from ..compare import (
    MAX_RESAMPLES,
    CompareInputError,
    Comparison,
    Side,
    comparison_dict,
    comparison_markdown,
    read_side,
)
from ..compare import compare as compare_sides
from ..compare import regression_reasons as regressions
from ..compare.comparison import delta_text, sign_text
from ..files.summaries import SummaryFileError, read_summary_file
from ..reports.html import render_comparison
from ..reports.terminal import plain
from ..runner.stored import stored_summary
from ..store import Store
from ..store.records import RunRecord
from .codes import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK
from .shell import consoles, open_store, usage, write_file

T = TypeVar("T")


@click.command()
@click.argument("baseline")
@click.argument("candidate")
@click.option("--store", "store_url", metavar="URL", help="Database URL of the run store.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option(
    "--markdown",
    "markdown_path",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write a Markdown summary ('-' for stdout; also appended to $GITHUB_STEP_SUMMARY).",
)
@click.option("--out", type=click.Path(dir_okay=False), help="Write the comparison (JSON).")
@click.option(
    "--html", "html_path", type=click.Path(dir_okay=False), help="Write the comparison as HTML."
)
@click.option("--fail-on-regression", is_flag=True, help="Exit 1 when the candidate regressed.")
@click.option(
    "--tolerance",
    type=click.FloatRange(0, 1),
    help="Also a regression: a mean gated delta below -T.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
@click.option(
    "--resamples",
    type=click.IntRange(1, MAX_RESAMPLES),
    default=2000,
    show_default=True,
    help="Bootstrap resamples.",
)
@click.option(
    "--confidence",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="Confidence of the interval; the sign test's α is 1 - C.",
)
def compare(
    baseline: str,
    candidate: str,
    store_url: str | None,
    as_json: bool,
    markdown_path: str | None,
    out: str | None,
    html_path: str | None,
    fail_on_regression: bool,
    tolerance: float | None,
    seed: int,
    resamples: int,
    confidence: float,
) -> None:
    """Compare the CANDIDATE run with the BASELINE run of the same suite, on gated scores.

    Each side is a run id in the store, a .json summary or report, or a .jsonl event log.
    Exits 0; with --fail-on-regression 1 when the candidate regressed; 2 on invalid input.
    """
    out_console, err = consoles()
    if as_json and markdown_path == "-":
        usage(err, "--json and --markdown - both write to stdout; choose one")
    runs = _Runs(err, store_url)
    try:
        sides = [_side(arg, runs) for arg in (baseline, candidate)]
        comparison = compare_sides(
            sides[0], sides[1], seed=seed, resamples=resamples, confidence=confidence
        )
        reasons = regressions(comparison, tolerance)
    except (CompareInputError, SummaryFileError) as exc:
        usage(err, plain(str(exc)))
    for warning in comparison.warnings:
        err.print(f"[yellow]warning:[/yellow] {plain(warning)}")
    try:
        _write(comparison, tolerance, out, markdown_path)
        if html_path:
            write_file(
                html_path, render_comparison(comparison_dict(comparison, tolerance=tolerance))
            )
    except OSError as exc:  # a directory, a read-only path: a line, not a traceback
        usage(err, plain(f"cannot write {exc.filename or 'the output'}: {exc.strerror or exc}"))
    if as_json:
        click.echo(json.dumps(comparison_dict(comparison, tolerance=tolerance), indent=2))
    elif markdown_path != "-":
        print_comparison(out_console, comparison, reasons)
    if fail_on_regression and reasons:
        if as_json or markdown_path == "-":  # the table, which names them, was not printed
            for reason in reasons:
                err.print(f"[red]regression:[/red] {plain(reason)}")
        err.print("[red]✗[/red] the candidate regressed (--fail-on-regression)")
        sys.exit(EXIT_FAILED)
    sys.exit(EXIT_OK)


def _write(c: Comparison, tolerance: float | None, out: str | None, md: str | None) -> None:
    if out:
        write_file(out, json.dumps(comparison_dict(c, tolerance=tolerance), indent=2) + "\n")
    text = comparison_markdown(c, tolerance=tolerance)
    if md == "-":
        click.echo(text, nl=False)
    elif md:
        write_file(md, text)
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:  # like run and grade: the comparison shows on the job's page
        with open(step_summary, "a", encoding="utf-8") as handle:
            handle.write(text)


# --- the sides ---------------------------------------------------------------------------


class _Runs:
    """Runs from the store, opened only when a side is a run id (a file needs no database)."""

    def __init__(self, err: Console, url: str | None) -> None:
        self._err, self._url = err, url
        self._store: Store | None = None

    def get(self, run_id: str) -> RunRecord | None:
        return self._read(lambda store: store.get_run(run_id))

    def summary(self, run: RunRecord) -> Any:
        """The run's summary as its log bears it out (the one reader of a verdict)."""
        return self._read(lambda store: stored_summary(store, run))

    def _read(self, read: Callable[[Store], T]) -> T:
        if self._store is None:
            self._store = open_store(self._err, self._url)
        try:
            return read(self._store)
        except Exception as exc:  # the database refused: exit 3, as when it cannot be opened
            # a database error's text quotes its parameters: only its first line, bounded
            lines = str(exc).splitlines()
            cause = f"{type(exc).__name__}: {lines[0][:300] if lines else ''}"
            self._err.print(f"[red]error:[/red] the store could not be read: {plain(cause)}")
            sys.exit(EXIT_INCOMPLETE)


def _side(arg: str, runs: _Runs) -> Side:
    """A file when it ends in .json or .jsonl or names an existing file; else a run id."""
    path = Path(arg)
    if path.suffix.lower() in (".json", ".jsonl") or path.is_file():
        return _from_file(arg)
    run = runs.get(arg)
    if run is None:
        raise CompareInputError(f"{arg}: no such run in the store, and not a file")
    if run.status != "completed" or run.summary is None:
        raise CompareInputError(
            f"run {arg} is {run.status}; only a completed run has a summary to compare"
        )
    return read_side(runs.summary(run), arg)


def _from_file(path: str) -> Side:
    read = read_summary_file(path)
    try:
        return read_side(read.document, path)
    except CompareInputError as exc:
        prefix = "$.payload.outputs.evalSummary" if read.within else "$"
        where = prefix + exc.path.removeprefix("$")
        raise CompareInputError(read.locate(exc.loc, where, exc.message)) from None


# --- the terminal ------------------------------------------------------------------------


def print_comparison(console: Console, c: Comparison, reasons: list[str]) -> None:
    """Per task the gated scores, pass rates, verdicts and deltas; then the evidence."""
    base, cand = c.baseline, c.candidate
    table = Table(
        title=f"{base.suite_id}: {plain(base.source)} → {plain(cand.source)}",
        title_justify="left",
    )
    for name in ("task", "gated", "Δ gated", "pass rate", "verdict", "Δ score (ungated)", "note"):
        table.add_column(name, justify="right" if name.startswith("Δ") else "left")
    for t in c.tasks:
        b, k = t.baseline, t.candidate
        note = t.bucket.replace("_", " ") if t.bucket.startswith("newly") else ""
        table.add_row(
            plain(t.task_id),
            f"{b.gated_score:.3g} → {k.gated_score:.3g}",
            _signed(t.gated_delta),
            f"{b.pass_rate:.3g} → {k.pass_rate:.3g}",
            f"{_verdict(b.passed)} → {_verdict(k.passed)}",
            f"{t.score_delta:+.3g}",
            ", ".join(filter(None, [note, "flaky" if t.flaky else ""])),
        )
    console.print(table)
    for line in _evidence(c):
        console.print(line)
    _print_verdict(console, c, reasons)


def _evidence(c: Comparison) -> list[str]:
    base, cand = c.baseline, c.candidate
    lines = [
        f"gated aggregate {base.gated_aggregate_score:.4g} → {cand.gated_aggregate_score:.4g};"
        f" ungated {base.aggregate_score:.4g} → {cand.aggregate_score:.4g} (information only)",
        " · ".join(
            f"{name} {len(ids)}"
            for name, ids in (
                ("newly failing", c.newly_failing),
                ("newly passing", c.newly_passing),
                ("still failing", c.still_failing),
                ("still passing", c.still_passing),
                ("flaky", c.flaky),
            )
        ),
        plain(sign_text(c.sign_test)) + f" (α = {float(c.sign_test.alpha):g})",
    ]
    interval = delta_text(c)
    if interval is not None:
        lines.append(interval)
    for name, ids in (("added (not paired)", c.added), ("removed (not paired)", c.removed)):
        if ids:
            lines.append(f"[yellow]{name}:[/yellow] {plain(', '.join(ids))}")
    return lines


def _print_verdict(console: Console, c: Comparison, reasons: list[str]) -> None:
    style = {"improved": "green", "degraded": "red", "inconclusive": "yellow"}[c.verdict]
    console.print(f"[{style}]{c.verdict.upper()}[/{style}]")
    for reason in c.reasons:
        console.print(f"  • {plain(reason)}")
    if not reasons:
        console.print("regression: none")
        return
    console.print("[red]regression:[/red]")
    for reason in reasons:
        console.print(f"  [red]•[/red] {plain(reason)}")


def _signed(value: float) -> str:
    text = f"{value:+.3g}"
    if value < 0:
        return f"[red]{text}[/red]"
    return f"[green]{text}[/green]" if value > 0 else text


def _verdict(passed: bool) -> str:
    return "[green]pass[/green]" if passed else "[red]fail[/red]"
