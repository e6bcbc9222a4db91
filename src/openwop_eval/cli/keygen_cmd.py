"""``openwop-eval keygen``: a new Ed25519 signing key for the host's ``[signing]`` section."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sys
import time
from pathlib import Path
from typing import NoReturn

import click
from rich.console import Console

from ..reports.terminal import plain
from .codes import EXIT_INVALID, EXIT_OK


@click.command()
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(dir_okay=False),
    help="The private key (PKCS#8 PEM, mode 0600); the public key goes to OUT.pub.",
)
@click.option("--key-id", help="The key's id in discovery (default: host-YYYYMMDD-<fingerprint>).")
@click.option("--force", is_flag=True, help="Replace the key files if they exist.")
def keygen(out: str, key_id: str | None, force: bool) -> None:
    """Make an Ed25519 key pair: OUT (private, mode 0600) and OUT.pub (SPKI PEM).

    Prints the key id, the raw public key as discovery publishes it and a `[signing]`
    section for the host configuration; never the private key. Exits 0, or 2 on an
    invalid key id, existing files without --force, or files that cannot be written.
    """
    from ..conformance.signing import KEY_ID_PATTERN, generate  # cryptography: only here

    err = Console(stderr=True, highlight=False, soft_wrap=True)
    if key_id is not None and not KEY_ID_PATTERN.fullmatch(key_id):
        _refuse(err, f"--key-id must be 1 to 128 of [A-Za-z0-9._~-], not {key_id!r}")
    private_path = Path(out).absolute()
    public_path = private_path.with_name(private_path.name + ".pub")
    existing = [str(p) for p in (private_path, public_path) if os.path.lexists(p)]
    if existing and not force:
        _refuse(err, f"already there: {', '.join(existing)} (--force replaces)")
    private, public, raw = generate()
    key_id = key_id or default_key_id(raw)
    try:
        private_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_exclusive(private_path, private, 0o600, replace=force)
        write_exclusive(public_path, public, 0o644, replace=force)
    except OSError as exc:
        _refuse(err, f"cannot write {exc.filename or private_path}: {exc.strerror or exc}")
    click.echo(f"key id:      {key_id}")
    click.echo(f"public key:  {raw}")
    click.echo(f"private key: {private_path} (mode 0600; keep it secret)")
    click.echo(f"public PEM:  {public_path}")
    click.echo("\nFor the host configuration (docs/host.md#signing-key):\n")
    click.echo(signing_section(key_id, private_path))
    sys.exit(EXIT_OK)


def default_key_id(raw: str) -> str:
    """``host-<UTC date>-<8 hex of the public key's SHA-256>``: sortable, and unique."""
    from ..conformance.signing import b64url_decode

    fingerprint = hashlib.sha256(b64url_decode(raw, 32)).hexdigest()[:8]
    return f"host-{time.strftime('%Y%m%d', time.gmtime())}-{fingerprint}"


def signing_section(key_id: str, key_file: Path) -> str:
    # a JSON string without ASCII escaping is a TOML basic string
    return (
        f"[signing]\nkey_id = {json.dumps(key_id)}\n"
        f"key_file = {json.dumps(str(key_file), ensure_ascii=False)}"
    )


def write_exclusive(path: Path, data: bytes, mode: int, *, replace: bool) -> None:
    """Write ``path`` created with ``mode``: never visible with wider permissions, and never
    half written when it replaces a file (a temporary file then an atomic rename)."""
    target = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp") if replace else path
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(target, flags, mode)
    try:
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, mode)  # exactly ``mode``, whatever the umask
            with os.fdopen(fd, "wb", closefd=False) as file:
                file.write(data)
                file.flush()
                os.fsync(fd)
        finally:
            os.close(fd)
        if replace:
            os.replace(target, path)
    except BaseException:
        target.unlink(missing_ok=True)
        raise


def _refuse(err: Console, message: str) -> NoReturn:
    err.print(f"[red]error:[/red] {plain(message)}")
    sys.exit(EXIT_INVALID)
