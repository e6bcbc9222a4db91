"""``openwop-eval conformance``: the RFC 0246 legs, black-box, against any host (``URL``,
the default command), and ``verify BUNDLE`` for signed certification bundles."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import click
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..conformance import signing
from ..conformance.bundle import check_bundle
from ..conformance.evidence import HostBuild, build_evidence
from ..conformance.harness import ConformanceResult, Harness, HostUnreachableError
from ..conformance.verifier import signing_keys
from .codes import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_INVALID, EXIT_OK
from .conformance_verify import JSON_OUTPUT, emit_json, verify

STYLE = {
    "executed-pass": "green",
    "executed-fail": "red",
    "inapplicable": "yellow",
    "blocked": "magenta",
}


class _DefaultToRun(click.Group):
    """``conformance URL …`` runs the legs; a known subcommand name (``verify``) picks it."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_DefaultToRun, context_settings={"help_option_names": ["-h", "--help"]})
def conformance() -> None:
    """RFC 0246 conformance: run the legs against a host (``conformance URL``, the same as
    ``conformance run URL``), or verify a signed certification bundle (``conformance verify``)."""


conformance.add_command(verify)


class _Signing:
    """The evidence options, checked before the host is contacted."""

    def __init__(self, key: Ed25519PrivateKey, key_id: str, build: HostBuild) -> None:
        self.key, self.key_id, self.build = key, key_id, build


def _signing(
    err: Console, key_source: str | None, key_id: str | None, host_build: str | None
) -> _Signing:
    if not key_source or not key_id or not host_build:
        missing = [
            name
            for name, value in (
                ("--signing-key (or $OPENWOP_BUNDLE_SIGNING_KEY)", key_source),
                ("--signing-key-id (or $OPENWOP_BUNDLE_SIGNING_KEY_ID)", key_id),
                ("--host-build KIND:ID (or $OPENWOP_HOST_BUILD)", host_build),
            )
            if not value
        ]
        _usage(err, "--evidence needs " + ", ".join(missing))
    try:
        pem = key_source.encode() if key_source.startswith("-----BEGIN") else _read(key_source)
        key = signing.private_key_from_pem(pem)
        build = HostBuild.parse(host_build)
    except (OSError, ValueError) as exc:  # SigningKeyError is a ValueError
        _usage(err, f"--evidence: {exc}")
    if not signing.KEY_ID_PATTERN.fullmatch(key_id):
        _usage(err, "--signing-key-id is 1 to 128 of A-Z a-z 0-9 . _ ~ -")
    return _Signing(key, key_id, build)


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        data = handle.read(signing.MAX_PEM_BYTES + 1)
    if len(data) > signing.MAX_PEM_BYTES:
        raise ValueError(f"the signing key file is over {signing.MAX_PEM_BYTES} bytes")
    return data


@conformance.command("run")
@click.argument("url")
@click.option(
    "--api-key",
    envvar="OPENWOP_API_KEY",
    default="dev-key",
    show_default=True,
    help="Bearer key for the host (or $OPENWOP_API_KEY).",
)
@JSON_OUTPUT
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
@click.option(
    "--require-behavior",
    is_flag=True,
    envvar="OPENWOP_REQUIRE_BEHAVIOR",
    help="Strict mode (or $OPENWOP_REQUIRE_BEHAVIOR=true): a leg that would be inapplicable "
    "or blocked fails instead.",
)
@click.option(
    "--evidence",
    "evidence_path",
    type=click.Path(dir_okay=False),
    help="Write signed evidence (certification bundle v3 shape) here.",
)
@click.option(
    "--signing-key",
    envvar="OPENWOP_BUNDLE_SIGNING_KEY",
    metavar="PEM",
    help="The host's Ed25519 PKCS#8 PEM file (or $OPENWOP_BUNDLE_SIGNING_KEY: a path or the "
    "PEM itself).",
)
@click.option(
    "--signing-key-id",
    envvar="OPENWOP_BUNDLE_SIGNING_KEY_ID",
    metavar="ID",
    help="The key's id in the host's discovery signingKeys[].",
)
@click.option(
    "--host-build",
    envvar="OPENWOP_HOST_BUILD",
    metavar="KIND:ID",
    help="What was tested: image-digest:…, commit:… or artifact-sha256:….",
)
def run(
    url: str,
    api_key: str,
    json_path: str | None,
    suite_refs: tuple[str, ...],
    timeout_s: float,
    require_behavior: bool,
    evidence_path: str | None,
    signing_key: str | None,
    signing_key_id: str | None,
    host_build: str | None,
) -> None:
    """Run the RFC 0246 conformance legs against the OpenWOP host at URL.

    Each leg is executed-pass, executed-fail (with the assertion and the observed value),
    inapplicable (the host does not advertise the capability or list the fixture) or blocked
    (the host refused the credential). Exit 0 when no leg failed, 1 when one did, 2 on bad
    options or evidence that cannot be signed, 3 when the host cannot be reached.
    """
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    refs: dict[str, str] = {}
    for item in suite_refs:
        fixture, sep, ref = item.partition("=")
        if not sep or not fixture or not ref:
            _usage(err, f"--suite-ref takes FIXTURE=REF, got {item!r}")
        refs[fixture] = ref
    signer = _signing(err, signing_key, signing_key_id, host_build) if evidence_path else None
    harness = Harness(url, api_key, timeout_s, refs, require_behavior=require_behavior)
    try:
        result = harness.run()
    except HostUnreachableError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        sys.exit(EXIT_INCOMPLETE)
    finally:
        harness.close()
    emit_json(json_path, result.as_dict())
    if json_path != "-":
        print_result(Console(highlight=False, width=160), result)
    if signer is not None and evidence_path is not None:
        _write_evidence(err, result, signer, evidence_path)
    sys.exit(EXIT_OK if result.passed else EXIT_FAILED)


def _write_evidence(err: Console, result: ConformanceResult, signer: _Signing, path: str) -> None:
    if not any(leg.assertions for leg in result.legs):
        _usage(err, "no leg ran an assertion, so there is no evidence to sign")
    generated = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    try:
        bundle = build_evidence(
            result, build=signer.build, key=signer.key, key_id=signer.key_id, generated_at=generated
        )
    except (ValueError, TypeError) as exc:  # a discovery document that is not I-JSON
        _usage(err, f"the evidence cannot be built: {escape(str(exc)[:300])}")
    # Self-verification with the verifier's own code, against the keys the captured
    # discovery publishes: evidence that would not verify is never written as if it did.
    keys, _ = signing_keys(result.discovery)
    published = bool(result.discovery.get("signingKeys"))
    check = check_bundle(
        bundle, host_key=signer.key.public_key(), live_keys=keys if published else None
    )
    rejected = [r for r in check.rejections if r.name != "independent-unverifiable"]
    if rejected:
        _write_json(path + ".rejected.json", bundle)
        reasons = "; ".join(f"{r.name}: {r.message}" for r in rejected)
        _usage(
            err,
            f"the evidence does not verify ({escape(reasons[:600])}); kept as {path}.rejected.json",
        )
    _write_json(path, bundle)
    err.print(f"signed evidence written to {escape(path)}")
    if not published:
        err.print(
            "[yellow]note:[/yellow] the host's discovery publishes no signingKeys[]: this "
            "evidence verifies only with `conformance verify --host-key`"
        )


def _write_json(path: str, value: Any) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    partial.replace(target)


def _usage(err: Console, message: str) -> NoReturn:
    err.print(f"[red]error:[/red] {message}")
    sys.exit(EXIT_INVALID)


def print_result(console: Console, result: ConformanceResult) -> None:
    mode = " (require-behavior)" if result.require_behavior else ""
    table = Table(title=f"RFC 0246 conformance: {result.host}{mode}", title_justify="left")
    table.add_column("leg")
    table.add_column("result")
    table.add_column("assertions", justify="right")
    table.add_column("detail", overflow="fold")
    for leg in result.legs:
        style = STYLE[leg.result]
        detail = leg.detail or "every assertion held"
        failed = [a for a in leg.assertions if not a.passed]
        if failed and not leg.reason:
            detail = "\n".join(
                f"{a.name}: expected {a.expected!r}, observed {a.observed!r}" for a in failed
            )
        table.add_row(
            leg.leg,
            f"[{style}]{leg.result}[/{style}]",
            str(len(leg.assertions)),
            escape(detail),
        )
    console.print(table)
    digest = result.discovery_digest[:16] if result.discovery_digest else "-"
    verdict = "[green]no leg failed[/green]" if result.passed else "[red]a leg failed[/red]"
    console.print(f"{verdict}; discovery digest {digest}…")
