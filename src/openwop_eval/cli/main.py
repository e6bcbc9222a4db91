"""``openwop-eval``: validate, run, verify, grade, compare and serve eval suites.

Exit codes: 0 success, 1 the suite did not pass, 2 invalid input or usage, 3 the run could
not complete.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

import click
from rich.console import Console

from .. import __version__, collector, limits
from ..core import Problem, SuiteError
from ..suitefile import load_suite
from .codes import EXIT_INVALID
from .compare_cmd import compare
from .conformance_cmd import conformance
from .grade_cmd import grade
from .keygen_cmd import keygen
from .merge_cmd import merge
from .render import plain, print_problems
from .report_cmd import report
from .run_cmd import run
from .serve_cmd import serve
from .verify_cmd import verify
from .view_cmd import view


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="openwop-eval")
def main() -> None:
    """OpenWOP agent evaluation with the RFC 0246 trajectory gate."""
    collector.tune()


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


main.add_command(run)
main.add_command(grade)
main.add_command(verify)
main.add_command(merge)
main.add_command(report)
main.add_command(view)
main.add_command(serve)
main.add_command(conformance)
main.add_command(compare)
main.add_command(keygen)
