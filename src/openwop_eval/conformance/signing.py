"""Ed25519 keys and signatures for conformance evidence, through ``cryptography``.

Keys travel in two forms: PKCS#8 / SubjectPublicKeyInfo PEM files (what an operator keeps and
passes on the command line) and the raw 32-byte public key in base64url without padding
(43 characters), which is how discovery's ``signingKeys[]`` publishes it. Signatures are the
raw 64 bytes in base64url without padding (86 characters). Nothing here logs key material.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

PUBLIC_KEY_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]{43}")
SIGNATURE_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]{86}")
KEY_ID_PATTERN: Final = re.compile(r"[A-Za-z0-9._~-]{1,128}")
MAX_PEM_BYTES: Final = 16_384


class SigningKeyError(ValueError):
    """A key that cannot be read: the message says why, never what the key holds."""


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str, size: int) -> bytes:
    """Strict base64url without padding that decodes to exactly ``size`` bytes."""
    pattern = PUBLIC_KEY_PATTERN if size == 32 else SIGNATURE_PATTERN if size == 64 else None
    if pattern is None or not isinstance(text, str) or not pattern.fullmatch(text):
        raise ValueError(f"not {size} bytes in base64url without padding")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error as exc:
        raise ValueError(f"not base64url: {exc}") from exc
    if len(data) != size or b64url(data) != text:  # non-canonical trailing bits
        raise ValueError(f"not {size} bytes in canonical base64url")
    return data


def private_key_from_pem(pem: bytes) -> Ed25519PrivateKey:
    """An unencrypted PKCS#8 Ed25519 private key."""
    if len(pem) > MAX_PEM_BYTES:
        raise SigningKeyError(f"the key file is over {MAX_PEM_BYTES} bytes")
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise SigningKeyError(
            "not an unencrypted PKCS#8 PEM private key (make one with `openwop-eval keygen`)"
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"the key is {type(key).__name__.removeprefix('_')}, not Ed25519")
    return key


def public_key_from_pem(pem: bytes) -> Ed25519PublicKey:
    """An Ed25519 public key from SPKI PEM; a private key's PEM gives its public half."""
    if len(pem) > MAX_PEM_BYTES:
        raise SigningKeyError(f"the key file is over {MAX_PEM_BYTES} bytes")
    if b"PRIVATE KEY" in pem:
        return private_key_from_pem(pem).public_key()
    try:
        key = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError) as exc:
        raise SigningKeyError("not a PEM public key") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise SigningKeyError(f"the key is {type(key).__name__.removeprefix('_')}, not Ed25519")
    return key


def public_key_from_raw(text: str) -> Ed25519PublicKey:
    """Discovery's form: the raw 32 bytes, base64url without padding."""
    return Ed25519PublicKey.from_public_bytes(b64url_decode(text, 32))


def public_raw(key: Ed25519PublicKey | Ed25519PrivateKey) -> str:
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return b64url(raw)


def sign(key: Ed25519PrivateKey, data: bytes) -> str:
    return b64url(key.sign(data))


def verifies(key: Ed25519PublicKey, data: bytes, signature: str) -> bool:
    """Whether ``signature`` (86 base64url characters) is ``key``'s over ``data``."""
    try:
        key.verify(b64url_decode(signature, 64), data)
    except (InvalidSignature, ValueError):
        return False
    return True


def generate() -> tuple[bytes, bytes, str]:
    """A new key pair: (PKCS#8 private PEM, SPKI public PEM, raw public base64url)."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public, public_raw(key)
