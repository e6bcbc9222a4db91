"""Terminal rendering for the command line (display only; no decisions are made here)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape

from ..core import Problem


def print_problems(console: Console, source: str, problems: Sequence[Problem]) -> None:
    errors = [p for p in problems if p.severity == "error"]
    for problem in problems:
        where = f"{source}:{problem.line}" if problem.line is not None else source
        style = "red" if problem.severity == "error" else "yellow"
        console.print(
            f"{escape(where)} [bold]{escape(problem.path)}[/bold]"
            f" [{style}]{problem.severity}[/{style}]: {escape(problem.message)}"
        )
    if errors:
        console.print(
            f"[red]✗[/red] {escape(source)}: {len(errors)} error"
            f"{'s' if len(errors) != 1 else ''}; nothing was run"
        )
