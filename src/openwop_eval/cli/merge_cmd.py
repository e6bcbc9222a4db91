"""``openwop-eval merge``: merge the event logs of a run's shards into that run."""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack
from pathlib import Path

import click

from ..base import jsontext
from ..core import GradingError, SuiteError
from ..files.suites import load_suite, suite_document
from ..log.shards import Opener, ShardError, document_digest, merge_shards
from ..reports.model import build_report
from ..reports.terminal import plain, print_problems, print_run_table
from ..runner.events import stream_jsonl
from .codes import EXIT_FAILED, EXIT_INVALID, EXIT_OK
from .shell import consoles, open_output, write_file


@click.command()
@click.argument("shard_events", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--suite",
    "suite_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="The suite the shards ran (its digest must be the one each shard recorded).",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False),
    help="Write the merged run's EvalSummary here.",
)
@click.option(
    "--events",
    "events_path",
    type=click.Path(dir_okay=False),
    help="Write the merged run's event log here (JSON lines; `verify` reads it).",
)
def merge(
    shard_events: tuple[str, ...], suite_path: str, out: str, events_path: str | None
) -> None:
    """Merge SHARD_EVENTS (the --events files of `run --shard I/N`, one per shard) into one
    run and its summary; exit 0 if the suite passed, 1 if it did not, 2 when the shards are
    missing, given twice or do not belong together (every reason is printed)."""
    out_console, err = consoles()
    try:
        loaded = load_suite(suite_path)
    except SuiteError as exc:
        print_problems(err, exc.source or suite_path, exc.problems)
        sys.exit(EXIT_INVALID)
    digest = document_digest(suite_document(loaded.suite))
    logs: list[tuple[str, Opener]] = [(path, _opener(path)) for path in shard_events]
    # The merged log is written beside its path and moved there once the merge succeeded:
    # a refused merge leaves no partial log behind.
    partial = Path(f"{events_path}.partial") if events_path else None
    try:
        with ExitStack() as stack:
            sink = open_output(stack, str(partial), "w") if partial else None
            merged = merge_shards(
                loaded.suite,
                digest,
                logs,
                (lambda doc: sink.write(jsontext.dumps(doc) + "\n")) if sink else None,
            )
        if partial is not None:
            partial.replace(str(events_path))
    except ShardError as exc:
        _discard(partial)
        for reason in exc.reasons:
            err.print(f"[red]✗[/red] {plain(reason)}", highlight=False)
        err.print(f"[red]error:[/red] the {len(shard_events)} log(s) were not merged")
        sys.exit(EXIT_INVALID)
    except (OSError, ValueError, GradingError) as exc:
        _discard(partial)
        err.print(f"[red]error:[/red] {plain(str(exc))}", highlight=False)
        sys.exit(EXIT_INVALID)
    write_file(out, json.dumps(merged.summary, indent=2) + "\n")
    table = build_report(merged.run_id, "", merged.grade, merged.summary, {})
    print_run_table(out_console, table)
    err.print(f"merged {merged.shards} shard(s), {merged.trials} trial(s) into {merged.run_id}")
    sys.exit(EXIT_OK if table.passed else EXIT_FAILED)


def _discard(partial: Path | None) -> None:
    if partial is not None:
        partial.unlink(missing_ok=True)


def _opener(path: str) -> Opener:
    """Reads the shard's log from its start, as a stream, each time it is called. A log out
    of sequence order (not as `run --events` writes it) is refused where it goes wrong."""
    return lambda: stream_jsonl(path)
