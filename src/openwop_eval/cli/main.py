"""``openwop-eval``: validate, run, verify, grade, compare and serve eval suites.

Exit codes: 0 success, 1 the suite did not pass, 2 invalid input or usage, 3 the run could
not complete.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import NoReturn

import click
from rich.console import Console

from .. import __version__
from ..base import limits
from ..core import Problem, SuiteError
from ..core.tool_refs import ToolSources
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
@click.option(
    "--tool-catalog",
    type=click.Path(dir_okay=False),
    help="A tool catalog, as run reads it: its tools are provided.",
)
@click.option(
    "--tools", "tools_spec", metavar="MODULE", help="Live tools, as run's --tools: provided."
)
@click.option(
    "--mcp-upstream",
    "mcp_upstreams",
    multiple=True,
    metavar="NAME=URL|NAME=stdio:COMMAND",
    help="An MCP server, as run's: connected to list its tools, which are provided; repeatable.",
)
@click.option("--strict", is_flag=True, help="Warnings are errors: exit 2 if there is any.")
def validate(
    suite: str,
    as_json: bool,
    tool_catalog: str | None,
    tools_spec: str | None,
    mcp_upstreams: tuple[str, ...],
    strict: bool,
) -> None:
    """Check SUITE (JSON or YAML) and list every problem with its path and line, and warn of
    each trajectory tool nothing provides: the fixtures, nor the tools the options name.

    Exits 0 when the suite is valid (warnings may still be printed), 2 when it is not or,
    with --strict, when it has a warning.
    """
    console = Console(highlight=False, soft_wrap=True)
    tools = ToolSources()
    if tool_catalog is not None or tools_spec is not None or mcp_upstreams:
        from .validate_tools import tool_sources

        err = Console(stderr=True, highlight=False, soft_wrap=True)
        tools = tool_sources(err, tool_catalog, tools_spec, mcp_upstreams)
    try:
        loaded = load_suite(suite, tools)
    except SuiteError as exc:
        _invalid(console, suite, as_json, exc.problems, strict)
    if strict and loaded.warnings:
        _invalid(console, suite, as_json, loaded.warnings, strict)
    if as_json:
        _dump(suite, True, loaded.warnings)
        return
    print_problems(console, suite, loaded.warnings)
    s = loaded.suite
    console.print(
        f"[green]✓[/green] {plain(suite)}: valid suite [bold]{s.suite_id}[/bold]@{s.version}"
        f" ({len(s.tasks)} task{'s' if len(s.tasks) != 1 else ''})"
    )


def _invalid(
    console: Console, source: str, as_json: bool, problems: Sequence[Problem], strict: bool
) -> NoReturn:
    """List the problems of an invalid suite (``strict``: its warnings as errors) and exit."""
    if strict:
        problems = [replace(p, severity="error") for p in problems]
    if as_json:
        _dump(source, False, problems)
    else:
        print_problems(console, source, problems)
    sys.exit(EXIT_INVALID)


def _dump(source: str, valid: bool, problems: Sequence[Problem]) -> None:
    """The report for machines: the first ``MAX_JSON_PROBLEMS`` problems and the total."""
    items = [
        {"path": p.path, "line": p.line, "severity": p.severity, "message": p.message}
        for p in problems[: limits.MAX_JSON_PROBLEMS]
    ]
    report = {"source": source, "valid": valid, "problems": items, "problemCount": len(problems)}
    click.echo(json.dumps(report, indent=2))
