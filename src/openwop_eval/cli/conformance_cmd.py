"""``openwop-eval conformance URL``: the RFC 0246 legs, black-box, against any host."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..conformance.harness import ConformanceResult, Harness, HostUnreachableError
from .codes import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_INVALID, EXIT_OK

STYLE = {"pass": "green", "fail": "red", "inapplicable": "yellow"}


@click.command()
@click.argument("url")
@click.option(
    "--api-key",
    envvar="OPENWOP_API_KEY",
    default="dev-key",
    show_default=True,
    help="Bearer key for the host (or $OPENWOP_API_KEY).",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False),
    help="Write the machine-readable result here ('-' for stdout).",
)
@click.option(
    "--suite-ref",
    "suite_refs",
    multiple=True,
    metavar="FIXTURE=REF",
    help="The evalSuiteRef under which the host serves a fixture; repeatable.",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=float,
    default=120,
    show_default=True,
    help="Seconds a fixture run may take.",
)
def conformance(
    url: str, api_key: str, json_path: str | None, suite_refs: tuple[str, ...], timeout_s: float
) -> None:
    """Run the RFC 0246 conformance legs against the OpenWOP host at URL.

    Each leg is pass, fail (with the assertion and the observed value) or inapplicable (the
    host does not advertise the capability or list the fixture). Exit 0 when no leg failed,
    1 when one did, 3 when the host cannot be reached.
    """
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    refs: dict[str, str] = {}
    for item in suite_refs:
        fixture, sep, ref = item.partition("=")
        if not sep or not fixture or not ref:
            err.print(f"[red]error:[/red] --suite-ref takes FIXTURE=REF, got {item!r}")
            sys.exit(EXIT_INVALID)
        refs[fixture] = ref
    harness = Harness(url, api_key, timeout_s, refs)
    try:
        result = harness.run()
    except HostUnreachableError as exc:
        err.print(f"[red]error:[/red] {exc}")
        sys.exit(EXIT_INCOMPLETE)
    finally:
        harness.close()
    if json_path == "-":
        click.echo(json.dumps(result.as_dict(), indent=2, default=str))
    else:
        if json_path:
            Path(json_path).write_text(json.dumps(result.as_dict(), indent=2, default=str) + "\n")
        print_result(Console(highlight=False, width=160), result)
    sys.exit(EXIT_OK if result.passed else EXIT_FAILED)


def print_result(console: Console, result: ConformanceResult) -> None:
    table = Table(title=f"RFC 0246 conformance: {result.host}", title_justify="left")
    table.add_column("leg")
    table.add_column("verdict")
    table.add_column("detail", overflow="fold")
    for leg in result.legs:
        style = STYLE[leg.verdict]
        failed = [a for a in leg.assertions if not a.passed]
        if failed:
            detail = "\n".join(
                f"{a.name}: expected {a.expected!r}, observed {a.observed!r}" for a in failed
            )
        elif leg.reason:
            detail = leg.reason
        else:
            detail = f"{len(leg.assertions)} assertions held"
        table.add_row(leg.leg, f"[{style}]{leg.verdict}[/{style}]", escape(detail))
    console.print(table)
    digest = result.discovery_digest[:16] if result.discovery_digest else "-"
    verdict = "[green]no leg failed[/green]" if result.passed else "[red]a leg failed[/red]"
    console.print(f"{verdict}; discovery digest {digest}…")
