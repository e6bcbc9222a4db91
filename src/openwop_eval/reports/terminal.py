"""What a terminal shows: problems, the run table and the modes, as rich markup that prints
as written (display only; no decisions are made here). The command line and the pytest
plugin both print with it."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..base import limits
from ..core import Problem
from .model import Report
from .text import failure_lines, listed_tasks, quarantine_lines, simulator_line, verdict_text

USER_SIMULATOR_ERRORS = "user-simulator-errors"
"""The gate's rule for trials whose simulated user failed: its line is :func:`simulator_line`."""


def print_problems(console: Console, source: str, problems: Sequence[Problem]) -> None:
    """One line per problem, the first ``MAX_PRINTED_PROBLEMS`` of them, then a count."""
    errors = [p for p in problems if p.severity == "error"]
    shown = problems[: limits.MAX_PRINTED_PROBLEMS]
    for problem in shown:
        where = f"{source}:{problem.line}" if problem.line is not None else source
        style = "red" if problem.severity == "error" else "yellow"
        console.print(
            f"{plain(where)} [bold]{plain(problem.path)}[/bold]"
            f" [{style}]{problem.severity}[/{style}]: {plain(problem.message)}"
        )
    if len(problems) > len(shown):
        more = len(problems) - len(shown)
        console.print(f"… and {more:,} more problem{'s' if more != 1 else ''}")
    if errors:
        console.print(
            f"[red]✗[/red] {plain(source)}: {len(errors):,} error"
            f"{'s' if len(errors) != 1 else ''}; nothing was run"
        )


def plain(text: str) -> str:
    """``text`` as rich markup that prints as written: no control sequences, no surrogates.

    Keys and values in messages come from the (untrusted) document; a raw escape sequence
    would drive the terminal, a lone surrogate would crash the write.
    """
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return escape(text)


def print_run_table(console: Console, report: Report) -> None:
    """Per task: score, gated score, passed, and the first failed constraint of its failed
    trials, the first few of them (a report without its trials will do: a run's outline)."""
    table = Table(title=report.title, title_justify="left", show_lines=False)
    table.add_column("task")
    table.add_column("score", justify="right")
    table.add_column("gated", justify="right")
    table.add_column("passed")
    table.add_column("failed trials: first failed constraint", overflow="fold")
    tasks, left_out = listed_tasks(report)
    for task in tasks:
        failures = failure_lines(task, report.trials.count)
        table.add_row(
            task.task_id,
            f"{task.score:.3g}",
            f"{task.gated_score:.3g}",
            "[green]yes[/green]" if task.passed else "[red]no[/red]",
            escape("\n".join(failures)),
        )
    if tasks:
        console.print(table)
    if left_out is not None:
        console.print(f"[dim]{escape(left_out)}[/dim]")
    words = escape(verdict_text(report))
    colour = "red" if not report.passed else "yellow" if report.gate.failed_tasks else "green"
    verdict = f"[{colour}]{words}[/{colour}]"
    console.print(
        f"{verdict}  aggregate {report.aggregate_score:.3g},"
        f" gated {report.gated_aggregate_score:.3g} (pass score {report.pass_score:g});"
        f" {report.passed_count}/{len(report.tasks)} tasks passed; run {escape(report.run_id)}"
    )
    simulator = simulator_line(report)  # the gate's count, told apart from the agent's errors
    for reason in report.reasons:
        said = simulator if reason.rule == USER_SIMULATOR_ERRORS and simulator else str(reason)
        console.print(f"  [red]•[/red] {escape(said)}")
    for note in quarantine_lines(report):
        console.print(f"  [yellow]•[/yellow] {escape(note)}")


def print_modes(console: Console, report: Report) -> None:
    """What a regression or adversarial run adds: the delta, and findings by task, as its
    summary says them."""
    summary = report.summary
    regression = summary.get("regression")
    if isinstance(regression, dict):
        delta = regression["scoreDelta"]
        console.print(
            f"regression: aggregate score {delta:+.3g} against baseline"
            f" {escape(str(regression['baselineRunId']))} (compare gated scores with"
            " openwop-eval compare)"
        )
    for task in summary.get("tasks", ()):
        findings = task.get("safetyFindings")
        if findings:
            listed = ", ".join(f"{f['kind']} ({f['severity']})" for f in findings)
            console.print(f"[yellow]findings[/yellow] {escape(task['taskId'])}: {escape(listed)}")
