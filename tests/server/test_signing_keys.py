"""The host's `[signing]` section and discovery's `signingKeys[]`: the active key and the
retired ones published in the closed entry shape, every refusal located and never quoting a
key, and `serve` refusing to start on a bad key (docs/host.md#signing-key)."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from openwop_eval.cli.main import main
from openwop_eval.conformance.signing import (
    MAX_PEM_BYTES,
    generate,
    private_key_from_pem,
    public_key_from_raw,
    sign,
    verifies,
)
from openwop_eval.server import load_config
from openwop_eval.server.config import ConfigError, HostConfig
from tests.server.inprocess import AppHost

OLD_RAW = "F588CksLq-PVrpqTFhYcweE4WFYOcj6-jyjz7KmKipU"  # the spec's test vector key
ENV = "OPENWOP_TEST_SIGNING_KEY"
ENTRY_SCHEMA: dict[str, Any] = {  # capabilities.schema.json signingKeys, closed
    "type": "array",
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["keyId", "alg", "publicKey"],
        "properties": {
            "keyId": {"type": "string", "pattern": "^[A-Za-z0-9._~-]{1,128}$"},
            "alg": {"const": "ed25519"},
            "publicKey": {"type": "string", "pattern": "^[A-Za-z0-9_-]{43}$"},
            "use": {"enum": ["certification-bundle"]},
            "retiredAt": {"type": "string", "format": "date-time"},
        },
    },
}


class Key:
    """A key pair written as the operator keeps it: the private PEM at mode 0600."""

    def __init__(self, path: Path, mode: int = 0o600) -> None:
        self.private, self.public, self.raw = generate()
        self.path = path
        path.write_bytes(self.private)
        path.chmod(mode)

    def secrets(self) -> list[str]:
        """What must never be printed: the PEM, its body lines, the raw private bytes."""
        key = private_key_from_pem(self.private)
        raw = key.private_bytes(
            serialization.Encoding.Raw,
            serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )
        body = [line for line in self.private.decode().splitlines() if "-----" not in line]
        return [self.private.decode(), *body, raw.hex(), _b64(raw)]


def _b64(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def write(tmp: Path, toml: str) -> Path:
    path = tmp / "host.toml"
    path.write_text(toml)
    return path


def refusal(path: Path) -> str:
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    return str(refused.value)


def assert_clean(text: str, *keys: Key, extra: tuple[str, ...] = ()) -> None:
    for secret in [*(s for k in keys for s in k.secrets()), *extra]:
        assert secret not in text


@pytest.fixture
def key(tmp_path: Path) -> Key:
    (tmp_path / "keys").mkdir()
    return Key(tmp_path / "keys" / "host.pem")


def test_the_active_key_and_the_retired_ones_are_read_in_order(tmp_path: Path, key: Key) -> None:
    old = Key(tmp_path / "keys" / "old.pem")
    (tmp_path / "keys" / "old.pub.pem").write_bytes(old.public)
    config = load_config(
        write(
            tmp_path,
            f"""
[signing]
key_id = "acme-host-2026"
key_file = "keys/host.pem"

[[signing.retired]]
key_id = "acme-host-2025"
public_key_file = "keys/old.pub.pem"
retired_at = "2026-06-01T02:00:00+02:00"

[[signing.retired]]
key_id = "v2-reference-4"
public_key = "{OLD_RAW}"
retired_at = 2025-01-02T03:04:05.5Z
""",
        )
    )
    assert config.signing is not None
    assert config.signing.published() == [
        {
            "keyId": "acme-host-2026",
            "alg": "ed25519",
            "publicKey": key.raw,
            "use": "certification-bundle",
        },
        {
            "keyId": "acme-host-2025",
            "alg": "ed25519",
            "publicKey": old.raw,
            "use": "certification-bundle",
            "retiredAt": "2026-06-01T00:00:00Z",  # in UTC
        },
        {
            "keyId": "v2-reference-4",
            "alg": "ed25519",
            "publicKey": OLD_RAW,
            "use": "certification-bundle",
            "retiredAt": "2025-01-02T03:04:05.500000Z",
        },
    ]
    assert (
        config.signing.private_key().public_key() == private_key_from_pem(key.private).public_key()
    )
    # the configuration as text holds names and paths, never the key
    assert_clean(repr(config) + str(config) + config.model_dump_json(), key)


def _discovery(tmp_path: Path, config: HostConfig) -> tuple[dict[str, Any], str]:
    host = AppHost(f"sqlite:///{tmp_path / 'host.sqlite'}", config)
    try:
        response = host.request("GET", "/.well-known/openwop", key=None)
        assert response.status_code == 200
        return response.json(), response.headers["ETag"]
    finally:
        host.close()


def test_discovery_publishes_the_keys_that_verify_the_hosts_signatures(
    tmp_path: Path, key: Key
) -> None:
    path = write(
        tmp_path,
        f"""
[signing]
key_id = "acme-host-2026"
key_file = "keys/host.pem"

[[signing.retired]]
key_id = "acme-host-2025"
public_key = "{OLD_RAW}"
retired_at = "2026-06-01T00:00:00Z"
""",
    )
    config = load_config(path)
    doc, tag = _discovery(tmp_path / "a", config)
    keys = doc["signingKeys"]
    jsonschema.validate(keys, ENTRY_SCHEMA, format_checker=jsonschema.FormatChecker())
    assert [(k["keyId"], "retiredAt" in k) for k in keys] == [
        ("acme-host-2026", False),
        ("acme-host-2025", True),
    ]
    assert keys[1] == {
        "keyId": "acme-host-2025",
        "alg": "ed25519",
        "publicKey": OLD_RAW,
        "use": "certification-bundle",
        "retiredAt": "2026-06-01T00:00:00Z",
    }
    # a verifier resolves signature.keyId in discovery and checks with that publicKey
    attestation = b'{"discovery.sha256":"d1","witnessSha256":"cb"}'
    published = public_key_from_raw(
        next(k for k in keys if k["keyId"] == "acme-host-2026")["publicKey"]
    )
    assert verifies(published, attestation, sign(private_key_from_pem(key.private), attestation))
    assert config.signing is not None
    assert verifies(published, attestation, sign(config.signing.private_key(), attestation))
    assert not verifies(published, attestation, sign(Ed25519PrivateKey.generate(), attestation))
    # the rest of discovery is what a host without a key publishes; the ETag covers the keys
    unsigned, unsigned_tag = _discovery(tmp_path / "b", config.model_copy(update={"signing": None}))
    assert "signingKeys" not in unsigned
    assert {k: v for k, v in doc.items() if k != "signingKeys"} == unsigned
    assert tag != unsigned_tag


def test_a_key_given_by_a_variable_is_read_from_it(
    tmp_path: Path, key: Key, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, f'[signing]\nkey_id = "from-env"\nkey_env = "{ENV}"\n')
    for value in (key.private.decode(), key.private.decode().replace("\n", "\\n")):  # one line
        monkeypatch.setenv(ENV, value)
        config = load_config(path)
        assert config.signing is not None
        assert config.signing.published()[0]["publicKey"] == key.raw
    doc, _ = _discovery(tmp_path, config)
    assert doc["signingKeys"][0]["keyId"] == "from-env"


def _other_pem(kind: str) -> bytes:
    if kind == "ec":
        ec_key = ec.generate_private_key(ec.SECP256R1())
        return ec_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    return Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"passphrase"),
    )


ACTIVE = '[signing]\nkey_id = "k"\nkey_file = "keys/host.pem"\n'


def _retired(**fields: str) -> str:
    given = {
        "key_id": '"old"',
        "public_key": f'"{OLD_RAW}"',
        "retired_at": '"2026-06-01T00:00:00Z"',
    }
    given.update(fields)
    lines = [f"{name} = {value}" for name, value in given.items() if value]
    return ACTIVE + "[[signing.retired]]\n" + "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            '[signing]\nkey_id = "k"\n',
            "signing: Value error, give exactly one of key_file or key_env",
        ),
        (
            ACTIVE + f'key_env = "{ENV}"\n',
            "signing: Value error, give exactly one of key_file or key_env",
        ),
        ('[signing]\nkey_file = "keys/host.pem"\n', "signing.key_id: Field required"),
        (
            '[signing]\nkey_id = "acme host"\nkey_file = "keys/host.pem"\n',
            "signing.key_id: Value error, key_id must be 1 to 128 of [A-Za-z0-9._~-]",
        ),
        (
            f'[signing]\nkey_id = "{"k" * 129}"\nkey_file = "keys/host.pem"\n',
            "key_id must be 1 to 128 of",
        ),
        (ACTIVE + 'key = "inline"\n', "signing.key: Extra inputs are not permitted"),
        (
            '[signing]\nkey_id = "k"\nkey_env = "NOT-A-NAME"\n',
            "signing.key_env: String should match pattern",
        ),
        (
            ACTIVE + '[[signing.retired]]\nkey_id = "k"\n'
            f'public_key = "{OLD_RAW}"\nretired_at = "2026-06-01T00:00:00Z"\n',
            "signing: Value error, key ids must be unique among the active and retired: ['k']",
        ),
        (
            _retired(public_key='"short"'),
            "signing.retired.0.public_key: Value error, public_key must",
        ),
        (_retired(public_key=f'"{OLD_RAW[:-1]}V"'), "public_key must be the raw 32-byte"),
        (_retired(public_key=f'"{OLD_RAW}="'), "public_key must be the raw 32-byte"),
        (_retired(public_key=""), "give exactly one of public_key or public_key_file"),
        (
            _retired(public_key_file='"keys/old.pub.pem"'),
            "signing.retired.0: Value error, give exactly one of public_key or public_key_file",
        ),
        (_retired(retired_at=""), "signing.retired.0.retired_at: Field required"),
        *(
            (
                _retired(retired_at=when),
                "signing.retired.0.retired_at: Value error, retired_at must be an RFC 3339"
                " date-time with an offset",
            )
            for when in (
                '"2026-06-01"',
                '"yesterday"',
                '"2026-06-01T00:00:00"',
                '"2026-13-01T00:00:00Z"',
                "2026-06-01T00:00:00",  # a TOML local date-time: no offset
                "2026-06-01",
                "1780000000",
            )
        ),
    ],
)
def test_a_signing_section_that_is_wrong_is_refused_where_it_is_wrong(
    tmp_path: Path, key: Key, toml: str, message: str
) -> None:
    text = refusal(write(tmp_path, toml))
    assert message in text
    assert_clean(text, key)


def test_a_key_that_cannot_be_used_is_refused_without_quoting_it(
    tmp_path: Path, key: Key, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = tmp_path / "keys"
    where = f"signing: Value error, key_file {keys / 'host.pem'}: "
    path = write(tmp_path, ACTIVE)
    cases: list[tuple[bytes | None, int, str]] = [
        (None, 0o600, "cannot read it: No such file or directory"),
        (key.private, 0o644, "its permissions 0644 are too open: a private key must be readable"),
        (key.private, 0o640, "its permissions 0640 are too open"),
        (key.private, 0o604, "its permissions 0604 are too open"),
        (b"not a key at all\n", 0o600, "not an unencrypted PKCS#8 PEM private key"),
        (key.public, 0o600, "not an unencrypted PKCS#8 PEM private key"),  # the public half
        (_other_pem("encrypted"), 0o600, "not an unencrypted PKCS#8 PEM private key"),
        (_other_pem("ec"), 0o600, "the key is ECPrivateKey, not Ed25519"),
        (key.private + b"\n" * MAX_PEM_BYTES, 0o600, f"the key file is over {MAX_PEM_BYTES} bytes"),
    ]
    for content, mode, message in cases:
        (keys / "host.pem").unlink(missing_ok=True)
        if content is not None:
            (keys / "host.pem").write_bytes(content)
            (keys / "host.pem").chmod(mode)
        text = refusal(path)
        assert where + message in text, (mode, message, text)
        assert_clean(text, key)
    (keys / "host.pem").unlink()
    (keys / "host.pem").mkdir()
    assert where + "cannot read it: Is a directory" in refusal(path)
    os.mkfifo(keys / "fifo.pem", 0o600)  # would block a reader: refused at once
    fifo = write(tmp_path, '[signing]\nkey_id = "k"\nkey_file = "keys/fifo.pem"\n')
    assert "fifo.pem: not a regular file" in refusal(fifo)

    env = write(tmp_path, f'[signing]\nkey_id = "k"\nkey_env = "{ENV}"\n')
    monkeypatch.delenv(ENV, raising=False)
    assert f"key_env {ENV}: the variable is not set" in refusal(env)
    for value, message in [
        ("  \n", "the variable is empty"),
        (str(key.path), "not a path: for a file, use key_file"),
        (key.public.decode(), "not an unencrypted PKCS#8 PEM private key"),
        (
            "-----BEGIN PRIVATE KEY-----\nnot-base64\n-----END PRIVATE KEY-----\n",
            "not an unencrypted",
        ),
    ]:
        monkeypatch.setenv(ENV, value)
        text = refusal(env)
        assert f"signing: Value error, key_env {ENV}: " in text
        assert message in text
        if value.strip():
            assert value.strip() not in text  # the value is not echoed


def test_a_retired_key_file_is_read_and_the_active_key_cannot_be_retired(
    tmp_path: Path, key: Key
) -> None:
    (tmp_path / "keys" / "garbage.pem").write_text("nothing\n")
    (tmp_path / "keys" / "host.pub.pem").write_bytes(key.public)
    path = write(
        tmp_path,
        ACTIVE
        + "".join(
            f'[[signing.retired]]\nkey_id = "old{i}"\npublic_key{suffix} = "{value}"\n'
            'retired_at = "2026-06-01T00:00:00Z"\n'
            for i, (suffix, value) in enumerate(
                [
                    ("_file", "keys/missing.pem"),
                    ("_file", "keys/garbage.pem"),
                    ("_file", "keys/host.pub.pem"),
                    ("", key.raw),
                ]
            )
        ),
    )
    text = refusal(path)
    keys = tmp_path / "keys"
    assert f"retired.0.public_key_file {keys / 'missing.pem'}: cannot read it" in text
    assert f"retired.1.public_key_file {keys / 'garbage.pem'}: not a PEM public key" in text
    assert "retired.2 (old2) is the active key itself" in text
    assert "retired.3 (old3) is the active key itself" in text
    assert_clean(text, key)


def test_key_material_never_reaches_the_logs(
    tmp_path: Path, key: Key, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    path = write(tmp_path, ACTIVE)
    config = load_config(path)
    _discovery(tmp_path, config)
    key.path.chmod(0o644)
    refused = refusal(path)
    captured = capfd.readouterr()
    assert_clean(refused + caplog.text + captured.out + captured.err, key)


def test_serve_with_a_bad_key_exits_2_and_says_why(tmp_path: Path, key: Key) -> None:
    key.path.chmod(0o644)
    path = write(tmp_path, ACTIVE)
    result = CliRunner().invoke(main, ["serve", "--config", str(path), "--port", "0"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {path}: 1 problem(s):")
    assert f"key_file {key.path}: its permissions 0644 are too open" in result.stderr
    assert_clean(result.output, key)
    assert stat.S_IMODE(key.path.stat().st_mode) == 0o644  # reported, never changed
