"""``openwop-eval``: validate, run, verify, grade, compare and serve eval suites.

Exit codes: 0 success, 1 the suite did not pass, 2 invalid input or usage, 3 the run could
not complete.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Sequence

import click
from rich.console import Console

from .. import __version__
from ..base import limits
from ..core import Problem, SuiteError
from ..files.suites import load_suite
from ..reports.terminal import plain, print_problems
from ..runtime import gc_tuning
from .codes import EXIT_INVALID

COMMANDS = {
    "run": "run_cmd",
    "grade": "grade_cmd",
    "verify": "verify_cmd",
    "merge": "merge_cmd",
    "report": "report_cmd",
    "view": "view_cmd",
    "serve": "serve_cmd",
    "conformance": "conformance_cmd",
    "compare": "compare_cmd",
    "keygen": "keygen_cmd",
}
"""Each command and the module that defines it, imported only when it is the one run (or
listed by ``--help``): together they take most of a second to import, which every ``serve``
start would pay."""


class _Commands(click.Group):
    """The top-level group, its commands imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *COMMANDS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMANDS.get(cmd_name)
        if module is None:
            return super().get_command(ctx, cmd_name)
        command = getattr(importlib.import_module(f"{__package__}.{module}"), cmd_name)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="openwop-eval")
def main() -> None:
    """OpenWOP agent evaluation with the RFC 0246 trajectory gate."""
    gc_tuning.tune()


@main.command()
@click.argument("suite", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the problems as JSON.")
def validate(suite: str, as_json: bool) -> None:
    """Check SUITE (JSON or YAML) and list every problem with its path and line.

    Exits 0 when the suite is valid (warnings may still be printed), 2 when it is not.
    """
    console = Console(highlight=False, soft_wrap=True)
    try:
        loaded = load_suite(suite)
    except SuiteError as exc:
        if as_json:
            _dump(suite, False, exc.problems)
        else:
            print_problems(console, suite, exc.problems)
        sys.exit(EXIT_INVALID)
    if as_json:
        _dump(suite, True, loaded.warnings)
        return
    print_problems(console, suite, loaded.warnings)
    s = loaded.suite
    console.print(
        f"[green]✓[/green] {plain(suite)}: valid suite [bold]{s.suite_id}[/bold]@{s.version}"
        f" ({len(s.tasks)} task{'s' if len(s.tasks) != 1 else ''})"
    )


def _dump(source: str, valid: bool, problems: Sequence[Problem]) -> None:
    """The report for machines: the first ``MAX_JSON_PROBLEMS`` problems and the total."""
    items = [
        {"path": p.path, "line": p.line, "severity": p.severity, "message": p.message}
        for p in problems[: limits.MAX_JSON_PROBLEMS]
    ]
    report = {"source": source, "valid": valid, "problems": items, "problemCount": len(problems)}
    click.echo(json.dumps(report, indent=2))
