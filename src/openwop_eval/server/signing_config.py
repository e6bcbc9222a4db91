"""The host's ``[signing]`` section: the Ed25519 key it signs certification bundles with, and
the retired keys its discovery document still publishes (docs/host.md#signing-key).

    [signing]
    key_id = "acme-host-2026"
    key_file = "keys/host.pem"          # PKCS#8 PEM, mode 0600; or key_env = "VARIABLE"
    [[signing.retired]]                 # keys that signed older evidence
    key_id = "acme-host-2025"
    public_key = "…43 characters…"      # raw base64url, or public_key_file = "keys/old.pub.pem"
    retired_at = "2026-06-01T00:00:00Z"

The keys are read once, when the configuration is validated. Nothing here logs, prints or
puts into an error what a key file or the variable holds: messages name the file or the
variable and say what is wrong with it.
"""

from __future__ import annotations

import os
import re
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)

from ..conformance.signing import (
    KEY_ID_PATTERN,
    MAX_PEM_BYTES,
    SigningKeyError,
    private_key_from_pem,
    public_key_from_pem,
    public_key_from_raw,
    public_raw,
)

ALG: Final = "ed25519"
USE: Final = "certification-bundle"
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})")
_OPEN_BITS: Final = 0o077
"""Group or other permission bits: ssh refuses a private key with any of them, and so do we."""


def _key_id(value: str) -> str:
    if not KEY_ID_PATTERN.fullmatch(value):
        raise ValueError("key_id must be 1 to 128 of [A-Za-z0-9._~-]")
    return value


KeyId = Annotated[str, AfterValidator(_key_id)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RetiredKey(_Strict):
    """A key that signed older evidence: published with ``retiredAt`` so that evidence still
    verifies; its private half is not needed."""

    key_id: KeyId
    public_key: str | None = None
    """The raw 32-byte public key, base64url without padding (43 characters)."""
    public_key_file: str | None = Field(None, min_length=1)
    """Or its SubjectPublicKeyInfo PEM (a private key's PEM gives its public half)."""
    retired_at: datetime

    @field_validator("public_key")
    @classmethod
    def _raw(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                public_key_from_raw(value)
            except ValueError:
                raise ValueError(
                    "public_key must be the raw 32-byte Ed25519 key in base64url without"
                    " padding (43 characters)"
                ) from None
        return value

    @field_validator("retired_at", mode="before")
    @classmethod
    def _rfc3339(cls, value: Any) -> datetime:
        # TOML gives a datetime for an unquoted offset date-time, a str for a quoted one
        if isinstance(value, str) and _RFC3339.fullmatch(value.upper()):
            try:
                value = datetime.fromisoformat(value.upper())
            except ValueError:
                value = None
        if not isinstance(value, datetime) or value.utcoffset() is None:
            raise ValueError(
                "retired_at must be an RFC 3339 date-time with an offset, like 2026-06-01T00:00:00Z"
            )
        return value

    @model_validator(mode="after")
    def _one_public_key(self) -> RetiredKey:
        if (self.public_key is None) == (self.public_key_file is None):
            raise ValueError("give exactly one of public_key or public_key_file")
        return self

    @property
    def retired_at_text(self) -> str:
        """``retired_at`` in UTC, RFC 3339 with ``Z``, as discovery publishes it."""
        utc = self.retired_at.astimezone(UTC)
        fraction = f".{utc.microsecond:06d}" if utc.microsecond else ""
        return utc.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"


class SigningConfig(_Strict):
    """The active key (from a file or a variable) and the retired ones, read by
    :func:`read_keys`: then :meth:`private_key` and :meth:`published` answer."""

    key_id: KeyId
    key_file: str | None = Field(None, min_length=1)
    """An unencrypted PKCS#8 PEM private key, readable by its owner only."""
    key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The environment variable that holds the PEM (never the key itself in the file)."""
    retired: tuple[RetiredKey, ...] = ()
    _key: Ed25519PrivateKey | None = PrivateAttr(None)
    _published: tuple[dict[str, str], ...] = PrivateAttr(())

    @model_validator(mode="after")
    def _one_key_and_unique_ids(self) -> SigningConfig:
        if (self.key_file is None) == (self.key_env is None):
            raise ValueError("give exactly one of key_file or key_env")
        ids = [self.key_id, *(r.key_id for r in self.retired)]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"key ids must be unique among the active and retired: {repeated}")
        return self

    def private_key(self) -> Ed25519PrivateKey:
        if self._key is None:
            raise RuntimeError("the signing keys were not read (read_keys)")
        return self._key

    def published(self) -> list[dict[str, str]]:
        """Discovery's ``signingKeys[]``: the active key first, then each retired one."""
        return [dict(entry) for entry in self._published]


def read_keys(signing: SigningConfig, base_dir: str | Path) -> SigningConfig:
    """``signing`` with its keys read (paths relative to ``base_dir``); every problem in one
    :class:`ValueError`, none quoting what a key holds."""
    base = Path(base_dir)
    problems: list[str] = []
    entries: list[dict[str, str]] = []
    key: Ed25519PrivateKey | None = None
    try:
        key = _active(signing, base)
    except SigningKeyError as exc:
        problems.append(str(exc))
    else:
        active = {"keyId": signing.key_id, "alg": ALG, "publicKey": public_raw(key), "use": USE}
        entries.append(active)
    for index, retired in enumerate(signing.retired):
        raw = retired.public_key
        if retired.public_key_file is not None:
            path = (base / retired.public_key_file).resolve()
            try:
                raw = public_raw(public_key_from_pem(_read(path, private=False)))
            except SigningKeyError as exc:
                problems.append(f"retired.{index}.public_key_file {path}: {exc}")
                continue
        if key is not None and raw == entries[0]["publicKey"]:  # a rotation not done
            problems.append(f"retired.{index} ({retired.key_id}) is the active key itself")
            continue
        entries.append(
            {
                "keyId": retired.key_id,
                "alg": ALG,
                "publicKey": str(raw),
                "use": USE,
                "retiredAt": retired.retired_at_text,
            }
        )
    if problems:
        raise ValueError("; ".join(problems))
    resolved = signing.model_copy()
    resolved._key, resolved._published = key, tuple(entries)
    return resolved


def _active(signing: SigningConfig, base: Path) -> Ed25519PrivateKey:
    if signing.key_file is not None:
        path = (base / signing.key_file).resolve()
        try:
            return private_key_from_pem(_read(path, private=True))
        except SigningKeyError as exc:
            raise SigningKeyError(f"key_file {path}: {exc}") from None
    try:
        return private_key_from_pem(_env(signing.key_env))
    except SigningKeyError as exc:
        raise SigningKeyError(f"key_env {signing.key_env}: {exc}") from None


def _read(path: Path, *, private: bool) -> bytes:
    """At most ``MAX_PEM_BYTES`` + 1 bytes of a regular file (a FIFO does not block the
    host's start); a private key must be its owner's only, as ssh requires."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        with os.fdopen(os.open(path, flags), "rb") as file:
            mode = os.fstat(file.fileno()).st_mode
            if not stat.S_ISREG(mode):
                raise SigningKeyError("not a regular file")
            if private and os.name == "posix" and mode & _OPEN_BITS:
                raise SigningKeyError(
                    f"its permissions {stat.S_IMODE(mode):04o} are too open: a private key"
                    " must be readable by its owner only (chmod 600 it)"
                )
            return file.read(MAX_PEM_BYTES + 1)
    except OSError as exc:
        raise SigningKeyError(f"cannot read it: {exc.strerror or type(exc).__name__}") from None


def _env(name: str | None) -> bytes:
    value = os.environ.get(name or "")
    if value is None:
        raise SigningKeyError("the variable is not set")
    if not value.strip():
        raise SigningKeyError("the variable is empty")
    pem = value.encode("utf-8", "surrogateescape")
    if b"\n" not in pem:  # a one-line variable: the PEM's newlines written as \n
        pem = pem.replace(b"\\n", b"\n")
    if b"-----BEGIN" not in pem:
        raise SigningKeyError(
            "the variable does not hold a PEM private key (it holds the PEM itself, not a"
            " path: for a file, use key_file)"
        )
    return pem
