"""``openwop-eval report``: the reports of a run in the store, made after the fact."""

from __future__ import annotations

import click

from ..log.versions import LogVersionError
from ..reports.model import result_report
from ..reports.terminal import plain
from ..runner import RunError
from ..runner.stored import stored_result
from .shell import consoles, lists_trials, open_store, usage, write_outputs


@click.command()
@click.argument("run_id")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="Write the HTML report.")
@click.option("--report", type=click.Path(dir_okay=False), help="Write the rich JSON report.")
@click.option("--out", type=click.Path(dir_okay=False), help="Write the EvalSummary (JSON).")
@click.option("--junit", type=click.Path(dir_okay=False), help="Write a JUnit XML file.")
@click.option(
    "--markdown", "markdown_path", type=click.Path(dir_okay=False), help="Write Markdown."
)
@click.option("--store", "store_url", metavar="URL", help="Database URL of the run store.")
def report(
    run_id: str,
    html_path: str | None,
    report: str | None,
    out: str | None,
    junit: str | None,
    markdown_path: str | None,
    store_url: str | None,
) -> None:
    """Write the reports of RUN_ID from the store: graded from its log as the run was, with
    its trials' outputs, calls and verdicts. A run that has not finished shows its finished
    trials. Exits 0, or 2 when there is no such run or nothing to write."""
    _, err = consoles()
    if not any((html_path, report, out, junit, markdown_path)):
        usage(err, "name at least one output: --html, --report, --out, --junit or --markdown")
    store = open_store(err, store_url)
    try:  # LogVersionError: a newer version wrote its log
        result = stored_result(store, run_id)
    except (RunError, LogVersionError) as exc:
        usage(err, plain(str(exc)))
    try:
        made = result_report(result, trials=lists_trials(report, junit, html_path))
        write_outputs(made, out, report, junit, markdown_path, html_path, step_summary=False)
    except OSError as exc:
        usage(err, plain(f"cannot write {exc.filename or 'the output'}: {exc.strerror or exc}"))
