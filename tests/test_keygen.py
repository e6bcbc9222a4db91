"""`openwop-eval keygen`: a private key created at mode 0600, never overwritten by accident,
its public half beside it, and a `[signing]` section the host configuration accepts."""

from __future__ import annotations

import os
import re
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from openwop_eval.cli.main import main
from openwop_eval.conformance.signing import (
    KEY_ID_PATTERN,
    private_key_from_pem,
    public_key_from_pem,
    public_raw,
)
from openwop_eval.server import load_config


def keygen(*args: str) -> Result:
    return CliRunner().invoke(main, ["keygen", *args])


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def printed(result: Result, label: str) -> str:
    match = re.search(rf"^{label}:\s+(\S+)", result.stdout, re.MULTILINE)
    assert match, result.stdout
    return match.group(1)


def secrets_of(pem: bytes) -> list[str]:
    """The private PEM and each line of its body: none may be printed."""
    return [pem.decode(), *(line for line in pem.decode().splitlines() if "-----" not in line)]


@pytest.fixture
def umask() -> Iterator[None]:
    """A careless umask: the files' modes must not depend on it."""
    before = os.umask(0)
    yield
    os.umask(before)


def test_keygen_writes_a_0600_key_its_public_half_and_a_section_the_host_accepts(
    tmp_path: Path, umask: None
) -> None:
    out = tmp_path / "keys" / "host.pem"
    result = keygen("--out", str(out), "--key-id", "acme-host-2026")
    assert result.exit_code == 0, result.output
    assert mode(out) == 0o600
    assert mode(out.parent) == 0o700
    public_file = tmp_path / "keys" / "host.pem.pub"
    assert mode(public_file) == 0o644
    raw = printed(result, "public key")
    assert len(raw) == 43
    assert printed(result, "key id") == "acme-host-2026"
    assert public_raw(private_key_from_pem(out.read_bytes())) == raw
    assert public_raw(public_key_from_pem(public_file.read_bytes())) == raw
    for secret in secrets_of(out.read_bytes()):
        assert secret not in result.output
    assert "PRIVATE KEY-----" not in result.output

    section = result.stdout[result.stdout.index("[signing]") :]
    assert tomllib.loads(section) == {"signing": {"key_id": "acme-host-2026", "key_file": str(out)}}
    elsewhere = tmp_path / "etc"
    elsewhere.mkdir()
    (elsewhere / "host.toml").write_text(section)
    config = load_config(elsewhere / "host.toml")
    assert config.signing is not None
    assert config.signing.published() == [
        {
            "keyId": "acme-host-2026",
            "alg": "ed25519",
            "publicKey": raw,
            "use": "certification-bundle",
        }
    ]


def test_the_private_key_is_created_with_its_mode_in_one_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[tuple[str, int, int]] = []
    real = os.open

    def spy(path: Any, flags: int, mode: int = 0o777, **kwargs: Any) -> int:
        opened.append((os.fspath(path), flags, mode))
        return real(path, flags, mode, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    out = tmp_path / "host.pem"
    assert keygen("--out", str(out)).exit_code == 0
    writes = {path: (flags, mode) for path, flags, mode in opened if flags & os.O_WRONLY}
    flags, created = writes[str(out)]
    assert flags & os.O_CREAT
    assert flags & os.O_EXCL  # never an existing file, nor through a link
    assert created == 0o600  # no moment with wider permissions


def test_an_existing_key_is_never_replaced_without_force(tmp_path: Path) -> None:
    out = tmp_path / "host.pem"
    assert keygen("--out", str(out)).exit_code == 0
    private, public = out.read_bytes(), (tmp_path / "host.pem.pub").read_bytes()
    again = keygen("--out", str(out))
    assert again.exit_code == 2
    assert f"already there: {out}, {out}.pub (--force replaces)" in again.stderr
    assert out.read_bytes() == private
    assert (tmp_path / "host.pem.pub").read_bytes() == public

    (tmp_path / "lone.pem.pub").write_text("someone's public key")  # the public file alone
    lone = keygen("--out", str(tmp_path / "lone.pem"))
    assert lone.exit_code == 2
    assert not (tmp_path / "lone.pem").exists()


def test_force_replaces_both_files_atomically(tmp_path: Path, umask: None) -> None:
    out = tmp_path / "host.pem"
    first = keygen("--out", str(out))
    old = out.read_bytes()
    forced = keygen("--out", str(out), "--force", "--key-id", "rotated")
    assert forced.exit_code == 0, forced.output
    assert out.read_bytes() != old
    assert mode(out) == 0o600
    assert printed(forced, "public key") != printed(first, "public key")
    assert public_raw(public_key_from_pem((tmp_path / "host.pem.pub").read_bytes())) == printed(
        forced, "public key"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["host.pem", "host.pem.pub"]  # no temp


@pytest.mark.parametrize("key_id", ["acme host", "", "k" * 129, "acme/host", "clé"])
def test_an_invalid_key_id_is_refused_and_nothing_is_written(tmp_path: Path, key_id: str) -> None:
    result = keygen("--out", str(tmp_path / "host.pem"), "--key-id", key_id)
    assert result.exit_code == 2
    assert "--key-id must be 1 to 128 of [A-Za-z0-9._~-]" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_default_key_id_is_valid_dated_and_names_the_key(tmp_path: Path) -> None:
    result = keygen("--out", str(tmp_path / "host.pem"))
    key_id = printed(result, "key id")
    assert KEY_ID_PATTERN.fullmatch(key_id)
    assert re.fullmatch(r"host-\d{8}-[0-9a-f]{8}", key_id)
    other = keygen("--out", str(tmp_path / "other.pem"))
    assert printed(other, "key id") != key_id  # the fingerprint tells keys of one day apart


def test_out_is_required_and_a_directory_is_refused(tmp_path: Path) -> None:
    assert keygen().exit_code == 2
    assert keygen("--out", str(tmp_path)).exit_code == 2
    unwritable = tmp_path / "file"
    unwritable.write_text("")
    result = keygen("--out", str(unwritable / "host.pem"))  # its parent is a file
    assert result.exit_code == 2
    assert "error: cannot write" in result.stderr
