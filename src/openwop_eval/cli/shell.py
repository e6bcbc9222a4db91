"""What the commands that run a suite share: consoles, the store, running to an exit code,
and writing the outputs (summary, report, JUnit, Markdown)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable, Coroutine
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Any, NoReturn

import click
from rich.console import Console
from rich.markup import escape

from ..reports.html import render_report, report_data
from ..reports.model import Report, report_text
from ..reports.text import junit_xml, markdown
from ..runner import RunEndedError, RunError, RunResult
from ..store import Store, StoreError, StoreUnavailableError
from .codes import EXIT_INCOMPLETE, EXIT_INVALID
from .progress import RunProgress

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _options(*decorators: Decorator) -> Decorator:
    def apply(command: Callable[..., Any]) -> Callable[..., Any]:
        for decorator in reversed(decorators):
            command = decorator(command)
        return command

    return apply


output_options = _options(
    click.option("--out", type=click.Path(dir_okay=False), help="Write the EvalSummary (JSON)."),
    click.option(
        "--events", type=click.Path(dir_okay=False), help="Write the event log (JSON lines)."
    ),
    click.option("--report", type=click.Path(dir_okay=False), help="Write the rich JSON report."),
    click.option("--junit", type=click.Path(dir_okay=False), help="Write a JUnit XML file."),
    click.option(
        "--markdown",
        "markdown_path",
        type=click.Path(dir_okay=False),
        help="Write a Markdown summary (also appended to $GITHUB_STEP_SUMMARY when set).",
    ),
    click.option(
        "--html",
        "html_path",
        type=click.Path(dir_okay=False),
        help="Write the self-contained HTML report (it shows outputs and arguments).",
    ),
)
"""``--out``, ``--events``, ``--report``, ``--junit``, ``--markdown``, ``--html``: what a
graded run writes."""

judge_options = _options(
    click.option(
        "--judge",
        "judge_spec",
        metavar="JUDGE",
        help="For rubric tasks: scripted:PATH or openai:MODEL.",
    ),
    click.option("--judge-base-url", help="Base URL of an OpenAI-compatible endpoint."),
    click.option("--judge-api-key", help="API key for the judge endpoint (default: from env)."),
)
"""``--judge`` and its endpoint: who scores rubric tasks."""


def consoles() -> tuple[Console, Console]:
    out = Console(highlight=False)
    if not out.is_terminal:
        out = Console(highlight=False, width=160)  # CI logs: do not wrap reasons
    return out, Console(stderr=True, highlight=False, soft_wrap=True)


def open_store(err: Console, url: str | None) -> Store:
    """The run store, closed when the command ends (its connections with it)."""
    try:
        opened = Store(url)
    except StoreError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        sys.exit(EXIT_INCOMPLETE)
    click.get_current_context().call_on_close(opened.close)
    return opened


def run_to_end(
    err: Console, progress: RunProgress, coro: Coroutine[Any, Any, RunResult]
) -> RunResult:
    """Run to the end; every way it can stop short is an exit code and a line, never a
    traceback."""
    try:
        return asyncio.run(coro)
    except RunEndedError as exc:
        err.print(f"[red]the run could not complete:[/red] {escape(str(exc))}")
        sys.exit(EXIT_INCOMPLETE)
    except RunError as exc:
        usage(err, str(exc))
    except KeyboardInterrupt:
        err.print(
            "[yellow]interrupted[/yellow]: every finished trial is kept; continue with"
            f" openwop-eval run --resume {escape(progress.run_id or 'RUN_ID')}"
        )
        sys.exit(EXIT_INCOMPLETE)
    except StoreUnavailableError:  # away past the store's retries: the run is left open
        run_id = escape(progress.run_id or "RUN_ID")
        err.print(
            "[yellow]the store is unavailable[/yellow]: every committed trial is kept; once it"
            f" answers, continue with openwop-eval run --resume {run_id}"
        )
        sys.exit(EXIT_INCOMPLETE)
    except Exception as exc:  # the store, a judge endpoint refusing, a bug
        incomplete(err, exc)


async def closing_judge(coro: Coroutine[Any, Any, RunResult], judge: Any) -> RunResult:
    try:
        return await coro
    finally:
        if judge is not None:
            await judge.aclose()


def incomplete(err: Console, exc: Exception) -> NoReturn:
    # The first line names the cause; a database error's SQL and parameters (data) stay out
    # of CI logs.
    lines = str(exc).splitlines()
    cause = escape(f"{type(exc).__name__}: {lines[0][:300] if lines else ''}")
    err.print(f"[red]the run could not complete:[/red] {cause}")
    sys.exit(EXIT_INCOMPLETE)


def usage(err: Console, message: str) -> NoReturn:
    err.print(f"[red]error:[/red] {message}", markup=True)
    sys.exit(EXIT_INVALID)


def open_output(stack: ExitStack, path: str, mode: str) -> IO[str]:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return stack.enter_context(open(path, mode, encoding="utf-8"))


def write_outputs(
    report: Report,
    out: str | None,
    report_path: str | None,
    junit: str | None,
    markdown_path: str | None,
    html_path: str | None = None,
    step_summary: bool = True,
) -> None:
    """Every output asked for, each a rendering of the one ``report`` (built with its
    trials when ``--report``, ``--junit`` or ``--html`` is asked: :func:`lists_trials`)."""
    if out:
        write_file(out, json.dumps(report.summary, indent=2) + "\n")
    if report_path:
        write_file(report_path, report_text(report))
    if junit:
        write_file(junit, junit_xml(report))
    if html_path:
        write_file(html_path, render_report(report_data(report)))
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY") if step_summary else None
    if not markdown_path and not summary_file:
        return
    text = markdown(report)
    if markdown_path:
        write_file(markdown_path, text)
    if summary_file:
        with open(summary_file, "a", encoding="utf-8") as handle:
            handle.write(text)


def lists_trials(report_path: str | None, junit: str | None, html_path: str | None) -> bool:
    """Whether the outputs asked for list every trial (the JSON report, JUnit, HTML): then
    the run keeps its trials' grades and the report is built with them; the summary,
    Markdown and the run table need a task's first few failures only."""
    return bool(report_path or junit or html_path)


def write_file(path: str, text: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
