"""What a terminal shows: problems, the run table and the modes, as rich markup that prints
as written (display only; no decisions are made here). The command line and the pytest
plugin both print with it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import limits
from .core import Problem, SuiteGrade
from .runner.reports import failure_lines, listed_tasks


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


def print_run_table(console: Console, grade: SuiteGrade, run_id: str) -> None:
    """Per task: score, gated score, passed, and the first failed constraint of its failed
    trials, the first few of them (a grade without its trials will do: a run's outline)."""
    table = Table(
        title=f"{grade.plan.suite.suite_id}@{grade.plan.suite.version}",
        title_justify="left",
        show_lines=False,
    )
    table.add_column("task")
    table.add_column("score", justify="right")
    table.add_column("gated", justify="right")
    table.add_column("passed")
    table.add_column("failed trials: first failed constraint", overflow="fold")
    tasks, left_out = listed_tasks(grade)
    for task in tasks:
        failures = failure_lines(task, grade.plan.count)
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
    verdict = "[green]PASSED[/green]" if grade.passed else "[red]NOT PASSED[/red]"
    console.print(
        f"{verdict}  aggregate {grade.aggregate_score:.3g}, gated {grade.gated_aggregate_score:.3g}"
        f" (pass score {float(grade.plan.pass_score):g}); {grade.passed_count}/{len(grade.tasks)}"
        f" tasks passed; run {escape(run_id)}"
    )
    for reason in grade.reasons:
        console.print(f"  [red]•[/red] {escape(str(reason))}")


def print_modes(console: Console, summary: dict[str, Any]) -> None:
    """What a regression or adversarial run adds: the delta, and findings by task."""
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
