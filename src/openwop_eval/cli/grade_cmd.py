"""``openwop-eval grade``: grade recorded traces against a suite, without an agent.

The traces become a run — a replay agent per (task, trial), the users the traces record for
conversation tasks, and a recording of their tool results — which the one run service grades
like any run: the same store, event log, summary, reports and exit code as ``openwop-eval run``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from contextlib import ExitStack

import click
from rich.console import Console

from ..base import limits
from ..core import SuiteError
from ..files.suites import load_suite
from ..judges import resolve_judge
from ..reports.model import result_report
from ..reports.terminal import plain, print_modes, print_problems, print_run_table
from ..runner.api import run_spec_async
from ..runner.spec import RunSpec
from ..traces import AGENT_ID, TraceAgent, TraceProblem, TraceUsers, load_traces, recording_of
from .codes import EXIT_FAILED, EXIT_INVALID, EXIT_OK
from .modes import ModeArgs, checked, mode_options, with_terms
from .progress import RunProgress
from .shell import (
    closing_judge,
    consoles,
    judge_options,
    lists_trials,
    open_output,
    open_store,
    output_options,
    run_to_end,
    usage,
    write_outputs,
)


@click.command()
@click.argument("suite", type=click.Path(dir_okay=False))
@click.argument("traces", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--map",
    "map_path",
    type=click.Path(dir_okay=False),
    help="Which task and trial each trace records, for traces that do not say (JSON or YAML).",
)
@output_options
@judge_options
@click.option("--store", "store_url", metavar="URL", help="Database URL of the run store.")
@click.option("--agent-id", default=AGENT_ID, show_default=True, help="The agentId recorded.")
@mode_options
def grade(
    suite: str,
    traces: tuple[str, ...],
    map_path: str | None,
    out: str | None,
    events: str | None,
    report: str | None,
    junit: str | None,
    markdown_path: str | None,
    html_path: str | None,
    judge_spec: str | None,
    judge_base_url: str | None,
    judge_api_key: str | None,
    store_url: str | None,
    agent_id: str,
    baseline: str | None,
    canaries: tuple[str, ...],
    canaries_file: str | None,
    no_secret_scan: bool,
    severities: tuple[str, ...],
    fail_on_severity: str | None,
    require_all_tasks: bool,
    unknown_cost: str | None,
) -> None:
    """Grade the recorded TRACES (OpenAI chat messages or Responses items, OTLP/JSON spans,
    Inspect logs) against SUITE; exit 0 if the gate passed, 1 if it did not, 2 on invalid
    input, 3 if the run could not complete."""
    out_console, err = consoles()
    try:
        loaded = load_suite(suite)
        judge = resolve_judge(judge_spec, base_url=judge_base_url, api_key=judge_api_key)
    except SuiteError as exc:
        print_problems(err, exc.source or suite, exc.problems)
        sys.exit(EXIT_INVALID)
    except (ValueError, OSError) as exc:
        usage(err, str(exc))
    recorded = load_traces(traces, loaded.suite, map_path)
    if recorded.problems:
        _print_problems(err, recorded.problems)
        sys.exit(EXIT_INVALID)
    _print_missing(err, recorded.missing)
    store = open_store(err, store_url)
    given = ModeArgs(
        baseline,
        canaries,
        canaries_file,
        no_secret_scan,
        severities,
        fail_on_severity,
        require_all_tasks,
        unknown_cost,
    )
    agent = TraceAgent(recorded.records, agent_id)
    count = loaded.suite.trials_or_default.count
    spec = RunSpec(
        loaded,
        agent,
        f"python-object:{type(agent).__name__}",
        recording=recording_of(recorded.records, count),
        judge=judge,
        users=TraceUsers(recorded.records),
    )
    spec = checked(err, with_terms(err, spec, given), store)
    with ExitStack() as stack:
        sink = open_output(stack, events, "w") if events else None
        coro = run_spec_async(spec, store=store, events=sink)
        result = run_to_end(err, RunProgress(err, enabled=False), closing_judge(coro, judge))
    made = result_report(result, trials=lists_trials(report, junit, html_path))
    write_outputs(made, out, report, junit, markdown_path, html_path)
    print_run_table(out_console, made)
    print_modes(out_console, made)
    sys.exit(EXIT_OK if result.gate.passed else EXIT_FAILED)


def _print_problems(err: Console, problems: Sequence[TraceProblem]) -> None:
    for problem in problems[: limits.MAX_PRINTED_PROBLEMS]:
        err.print(f"{plain(str(problem))}", highlight=False)
    more = len(problems) - limits.MAX_PRINTED_PROBLEMS
    if more > 0:
        err.print(f"… and {more:,} more problem{'s' if more != 1 else ''}")
    count = len(problems)
    err.print(f"[red]✗[/red] {count:,} problem{'s' if count != 1 else ''}; nothing was graded")


def _print_missing(err: Console, missing: Sequence[tuple[str, int]]) -> None:
    """Trials no trace records: graded as errored (score 0, failed), said once up front."""
    if not missing:
        return
    cap = limits.MAX_PRINTED_PROBLEMS
    shown = ", ".join(f"{task} #{trial}" for task, trial in missing[:cap])
    more = f" and {len(missing) - cap:,} more" if len(missing) > cap else ""
    err.print(
        f"[yellow]{len(missing):,} trial(s) have no trace and count as failed:[/yellow]"
        f" {plain(shown)}{more} (trials count from 0)"
    )
