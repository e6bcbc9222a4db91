"""``openwop-eval conformance verify BUNDLE``: verify a certification bundle v3 from any host.

Exit codes are the certification digest's: 0 verified; 1 rejected (a named check failed, or
the file is JSON but not I-JSON); 2 coherent but not independently verified (no host key,
the live discovery document not read, no captured document, an independent claim without
its verifier key); 3 the bundle is missing, unreadable, over the size limit or not JSON —
or a key file given cannot be used, so nothing could be checked.

Everything printed from the bundle or the host is untrusted: control and format characters
are shown escaped and Rich markup is escaped, so a hostile bundle cannot drive the terminal.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
import httpx
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..conformance.bundle import Rejection, Verification
from ..conformance.ijson import IJsonError, printable
from ..conformance.rerun import Rerun, RerunError, rerun
from ..conformance.signing import SigningKeyError
from ..conformance.verifier import (
    DEFAULT_TIMEOUT,
    BundleUnreadableError,
    Discovery,
    fetch_discovery,
    load_public_key,
    read_bundle,
    verify_file,
)
from .codes import EXIT_INCOMPLETE, EXIT_OK

EXIT_VERIFIED = EXIT_OK
EXIT_UNVERIFIED = 2
"""The digest's "coherent but not independently verified" (not codes.EXIT_INVALID's usage)."""
EXIT_UNREADABLE = EXIT_INCOMPLETE
STYLE = {"verified": "green", "rejected": "red", "unverified": "yellow"}


JSON_OUTPUT = click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False),
    help="Write the machine-readable result here ('-' for stdout).",
)
"""The machine-readable result of a conformance command, to a file or stdout."""


def safe(value: Any, limit: int = 300) -> str:
    """Untrusted text made inert for the terminal: escaped controls, escaped markup, bounded."""
    text = printable(str(value))
    return escape(text if len(text) <= limit else text[:limit] + "…")


@click.command("verify")
@click.argument("bundle", type=click.Path(dir_okay=True, path_type=Path))
@click.option(
    "--host-key",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The host's public key (PEM). It cannot show the key is the host's; --discovery can.",
)
@click.option(
    "--discovery",
    "discovery_url",
    metavar="URL",
    help="Read signingKeys[] from the host's live discovery (base URL or .../.well-known/openwop).",
)
@click.option(
    "--verifier-key",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The independent verifier's public key (PEM), for an evidenceTier: independent claim.",
)
@JSON_OUTPUT
@click.option(
    "--timeout",
    "timeout_s",
    type=float,
    default=DEFAULT_TIMEOUT,
    show_default=True,
    help="Seconds the discovery request may take.",
)
@click.option(
    "--rerun",
    "do_rerun",
    is_flag=True,
    help="Also run the RFC 0246 legs live against the host the bundle names, and report any "
    "disagreement with the signed rows.",
)
@click.option(
    "--api-key",
    envvar="OPENWOP_API_KEY",
    default="dev-key",
    show_default=True,
    help="With --rerun: the bearer key for the host (or $OPENWOP_API_KEY).",
)
@click.option(
    "--require-behavior",
    is_flag=True,
    envvar="OPENWOP_REQUIRE_BEHAVIOR",
    help="With --rerun: re-run in strict mode (or $OPENWOP_REQUIRE_BEHAVIOR=true).",
)
def verify(
    bundle: Path,
    host_key: Path | None,
    discovery_url: str | None,
    verifier_key: Path | None,
    json_path: str | None,
    timeout_s: float,
    do_rerun: bool,
    api_key: str,
    require_behavior: bool,
) -> None:
    """Verify the certification bundle v3 at BUNDLE, offline or against the host's live keys.

    Every check of the digest runs: row and count coherence, the witness and discovery
    digests, the Ed25519 attestation, the independent tier, relaxations, the durability
    rung, blocked rows, profile derivability and opt-outs. With --rerun, the legs are also
    run live and a disagreement with a signed row is a rejection (rerun-disagrees). Exit 0
    verified, 1 rejected, 2 coherent but not independently verified, 3 not readable as JSON.
    """
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        host = load_public_key(host_key) if host_key else None
        verifier = load_public_key(verifier_key) if verifier_key else None
    except SigningKeyError as exc:
        err.print(f"[red]error:[/red] {safe(exc)}")
        sys.exit(EXIT_UNREADABLE)
    live = fetch_discovery(discovery_url, timeout=timeout_s) if discovery_url else None
    try:
        result = verify_file(bundle, host_key=host, discovery=live, verifier_key=verifier)
    except BundleUnreadableError as exc:
        emit_json(json_path, {"verdict": "unreadable", "exitCode": 3, "error": str(exc)})
        err.print(f"[red]unreadable:[/red] {safe(exc)}")
        sys.exit(EXIT_UNREADABLE)
    again = _rerun(bundle, api_key, require_behavior) if do_rerun else None
    if again is not None and again.disagreements:
        said = "; ".join(f"{c.id}: signed {c.signed}, live {c.live}" for c in again.disagreements)
        rejection = Rejection("rerun-disagrees", f"the live re-run disagrees: {said}", None)
        result = replace(result, rejections=(*result.rejections, rejection))
    code = result.exit_code
    if again is not None and again.unreachable and code == EXIT_VERIFIED:
        code = EXIT_UNVERIFIED  # the signed rows could not be re-checked
    data = result.as_dict() | {"exitCode": code}
    if live is not None:
        data["discovery"] = {"url": live.url, "read": live.keys is not None, "error": live.error}
    if again is not None:
        data["rerun"] = _rerun_dict(again)
    emit_json(json_path, data)
    if json_path != "-":
        console = Console(highlight=False, width=160)
        print_verification(console, bundle, result, live)
        if again is not None:
            print_rerun(console, again)
    sys.exit(code)


def _rerun(path: Path, api_key: str, require_behavior: bool) -> Rerun:
    try:
        parsed = read_bundle(path)
        return rerun(parsed, api_key, require_behavior=require_behavior)
    except (BundleUnreadableError, IJsonError, RerunError) as exc:
        return Rerun("-", [], f"the bundle cannot be re-run: {exc}")


def _rerun_dict(again: Rerun) -> dict[str, Any]:
    rows = [
        {"id": c.id, "signed": c.signed, "live": c.live, "agrees": c.agrees, "detail": c.detail}
        for c in again.rows
    ]
    return {"host": again.host, "unreachable": again.unreachable, "rows": rows}


def print_rerun(console: Console, again: Rerun) -> None:
    if again.unreachable:
        console.print(f"[yellow]re-run not done:[/yellow] {safe(again.unreachable)}")
        return
    table = Table(title=f"Live re-run against {safe(again.host)}", title_justify="left")
    for column in ("requirement", "signed", "live", "agrees", "live detail"):
        table.add_column(column, overflow="fold")
    for c in again.rows:
        agrees = "[green]yes[/green]" if c.agrees else "[red]no[/red]"
        if c.signed is None or c.live is None:
            agrees = "unsigned" if c.signed is None else "not re-run"
        table.add_row(
            safe(c.id), safe(c.signed or "-"), safe(c.live or "-"), agrees, safe(c.detail or "")
        )
    console.print(table)


def emit_json(json_path: str | None, data: dict[str, Any]) -> None:
    """Write ``data`` as indented JSON to ``json_path``, or to stdout for ``-``."""
    text = json.dumps(data, indent=2, default=str)
    if json_path == "-":
        click.echo(text)
    elif json_path:
        Path(json_path).write_text(text + "\n")


def _key_line(result: Verification, live: Discovery | None) -> str:
    key = safe(result.key_id or "-")
    if live is not None and live.keys is None:
        return f"{key}: live discovery not read ({safe(live.error)}), integrity only"
    if not result.signature_checked:
        return f"{key}: not checked (no --host-key, no --discovery)"
    where = (
        f"live discovery {safe(live.url)}" if result.key_source == "discovery" and live else "PEM"
    )
    state = "[green]verifies[/green]" if result.signature_verified else "[red]does not verify[/red]"
    retired = f", retired {safe(result.key_retired_at)}" if result.key_retired_at else ""
    return f"{key} from {where}: {state}{retired}"


def print_verification(
    console: Console, path: Path, result: Verification, live: Discovery | None
) -> None:
    host = result.host
    table = Table(title=f"Certification bundle: {safe(path)}", title_justify="left")
    table.add_column("check")
    table.add_column("result", overflow="fold")
    vendor = f" ({host['vendor']})" if host.get("vendor") else ""
    table.add_row("host", safe(f"{host.get('name')} {host.get('version')}{vendor}"))
    table.add_row("build", safe(f"{host.get('buildKind')}: {host.get('buildId')}"))
    suite = f"{host.get('suiteName')} {host.get('suiteVersion')}"
    table.add_row("suite", safe(f"{suite}, major {host.get('targetMajor')}"))
    table.add_row("signature key", _key_line(result, live))
    if result.independent_claimed:
        ok = result.verifier_signature_verified
        table.add_row("verifier signature", "verifies" if ok else "[red]not verified[/red]")
    table.add_row("derivability", "checked" if result.derivability_checked else "not checked")
    table.add_row("claimed certified", safe(", ".join(result.claimed_certified) or "none"))
    table.add_row("opted out", safe(", ".join(result.opted_out) or "none"))
    console.print(table)
    if result.rejections:
        rejected = Table(title="Rejections", title_justify="left")
        for column in ("name", "profile", "reason"):
            rejected.add_column(column, overflow="fold")
        for r in result.rejections:
            rejected.add_row(f"[red]{safe(r.name)}[/red]", safe(r.profile or "-"), safe(r.message))
        console.print(rejected)
    for line in result.undetermined:
        console.print(f"[yellow]undetermined:[/yellow] {safe(line)}")
    for line in (*result.notes, *(live.notes if live else ())):
        console.print(f"note: {safe(line)}")
    if live is not None and live.keys is not None:
        bundle_host = httpx.URL(str(host.get("discoveryUrl") or "")).host
        if bundle_host and bundle_host != httpx.URL(live.url).host:
            console.print(f"note: the bundle was captured from {safe(bundle_host)}")
    _print_0246(console, result)
    verdict = result.verdict
    profiles = ", ".join(result.certified_profiles) or "none"
    console.print(
        f"[{STYLE[verdict]}]{verdict}[/{STYLE[verdict]}] (exit {result.exit_code}); "
        f"certified: {safe(profiles)}"
    )
    if verdict == "unverified":
        for gap in result.gaps:
            console.print(f"  not independently verified: {safe(gap)}")


def _print_0246(console: Console, result: Verification) -> None:
    if not result.rfc0246:
        console.print("RFC 0246 claims: none (no openwop.requirement.0246.* row)")
        return
    table = Table(title="RFC 0246 claims", title_justify="left")
    for column in ("requirement", "disposition", "assertions", "detail"):
        table.add_column(column, overflow="fold")
    for claim in result.rfc0246:
        assertions = "-" if claim.assertions is None else str(claim.assertions)
        table.add_row(safe(claim.id), safe(claim.result), assertions, safe(claim.detail or ""))
    console.print(table)
