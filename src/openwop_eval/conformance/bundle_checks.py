"""The signature checks of a certification bundle v3 (pure): host key, verifier key.

The host key is resolved the way the digest requires (§6, §7.6): the ``signingKeys[]``
entry of the *live* discovery document whose ``keyId`` is ``signature.keyId``. Three
states stay apart — discovery not read (nothing is checked; integrity only), the key id
not published there (``key-not-published``), and a published key the signature does not
verify under (``signature-invalid``). A retired key that is still listed verifies a bundle
generated before ``retiredAt``; one generated after is ``key-retired``. A PEM given by the
operator (``--host-key``) is checked too, but cannot say whether it is the host's key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from . import digests, signing
from .bundle_shape import ABSENT, Rejection, Shape
from .ijson import snippet

KeySource = Literal["discovery", "pem"]


@dataclass(frozen=True)
class PublishedKey:
    """One ``signingKeys[]`` entry of a discovery document (``public_key``: 43 base64url)."""

    key_id: str
    public_key: str
    retired_at: str | None = None
    use: str | None = None


@dataclass
class SignatureOutcome:
    rejections: list[Rejection] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checked: bool = False
    verified: bool = False
    source: KeySource | None = None
    key_id: str | None = None
    retired_at: str | None = None
    verifier_checked: bool = False
    verifier_verified: bool = False
    independent: bool = False


def attestation(shape: Shape) -> bytes | None:
    """The bytes both signatures cover, or ``None`` if the bundle lacks a signed member."""
    if (
        shape.witness_sha256 is None
        or shape.build is None
        or not isinstance(shape.suite_version, str)
        or shape.discovery_sha256 is None
    ):
        return None
    try:
        return digests.attestation_bytes(
            shape.witness_sha256, shape.build, shape.suite_version, shape.discovery_sha256
        )
    except (ValueError, TypeError, UnicodeError):  # host.build carries a non-I-JSON value
        return None


def _text(value: object) -> bool:
    return isinstance(value, str) and value != ""


def _stamp(text: str) -> datetime | None:
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else None


def _fields_ok(shape: Shape, out: SignatureOutcome) -> bool:
    sig = shape.signature
    if sig is None:
        return False
    if sig.alg != "ed25519" or not isinstance(sig.key_id, str) or not isinstance(sig.sig, str):
        out.rejections.append(
            Rejection("signature-missing", "signature.{alg: ed25519, keyId, sig} is required")
        )
        return False
    if not sig.key_id or not sig.sig:
        out.rejections.append(Rejection("signature-missing", "signature.keyId or .sig is empty"))
        return False
    if sig.over != list(digests.SIGNATURE_OVER):
        out.rejections.append(
            Rejection(
                "signature-over", "signature.over must be " + ", ".join(digests.SIGNATURE_OVER)
            )
        )
        return False
    if not signing.KEY_ID_PATTERN.fullmatch(sig.key_id):
        out.rejections.append(Rejection("shape", "not a keyId (at /signature/keyId)"))
        return False
    if not signing.SIGNATURE_PATTERN.fullmatch(sig.sig):
        out.rejections.append(Rejection("shape", "not 86 base64url characters (at /signature/sig)"))
        return False
    out.key_id = sig.key_id
    if shape.signing_key_id is not None and shape.signing_key_id != sig.key_id:
        out.notes.append("host.signingKeyId differs from signature.keyId")
    return True


def _from_discovery(
    shape: Shape, out: SignatureOutcome, keys: Sequence[PublishedKey], data: bytes, sig: str
) -> None:
    key_id = out.key_id
    listed = [k for k in keys if k.key_id == key_id]
    out.checked, out.source = True, "discovery"
    if not listed:
        out.rejections.append(
            Rejection(
                "key-not-published",
                f"signature.keyId {snippet(str(key_id))!r} is not among the {len(keys)} "
                "signingKeys[] the live discovery document publishes",
            )
        )
        return
    verified = [k for k in listed if _verifies(k.public_key, data, sig)]
    if not verified:
        out.rejections.append(
            Rejection(
                "signature-invalid", "the attestation does not verify under the published key"
            )
        )
        return
    key = verified[0]
    out.retired_at = key.retired_at
    if key.retired_at is not None:
        retired = _stamp(key.retired_at)
        if retired is None or shape.generated_at is None or retired < shape.generated_at:
            out.rejections.append(
                Rejection(
                    "key-retired",
                    f"key {snippet(str(key_id))!r} was retired at {snippet(key.retired_at)}, "
                    "before this bundle's generatedAt",
                )
            )
            return
        out.notes.append(f"the key is retired ({snippet(key.retired_at)}) but still listed")
    out.verified = True


def _verifies(public_key: str, data: bytes, sig: str) -> bool:
    try:
        return signing.verifies(signing.public_key_from_raw(public_key), data, sig)
    except ValueError:
        return False


def check_signatures(
    shape: Shape,
    *,
    host_key: Ed25519PublicKey | None,
    live_keys: Sequence[PublishedKey] | None,
    verifier_key: Ed25519PublicKey | None,
) -> SignatureOutcome:
    """Digest §7.5–7.7: signature fields, the host key, the independent tier."""
    out = SignatureOutcome()
    data = attestation(shape)
    if _fields_ok(shape, out) and shape.signature is not None:
        sig = str(shape.signature.sig)
        if data is None:
            out.notes.append("the signed members are incomplete; the signature was not checked")
        elif live_keys is not None:
            _from_discovery(shape, out, live_keys, data, sig)
            if host_key is not None and not signing.verifies(host_key, data, sig):
                out.verified = False
                out.rejections.append(
                    Rejection(
                        "signature-invalid", "the attestation does not verify under --host-key"
                    )
                )
        elif host_key is not None:
            out.checked, out.source = True, "pem"
            out.verified = signing.verifies(host_key, data, sig)
            if not out.verified:
                out.rejections.append(
                    Rejection(
                        "signature-invalid", "the attestation does not verify under the host key"
                    )
                )
    _independent(shape, out, data, verifier_key)
    return out


def _independent(
    shape: Shape, out: SignatureOutcome, data: bytes | None, verifier_key: Ed25519PublicKey | None
) -> None:
    out.independent = any(p.tier == "independent" for p in shape.profiles)
    vs = shape.verifier_signature
    if not out.independent:
        if vs is not ABSENT:
            out.notes.append("a verifierSignature is present but no profile claims independent")
        return
    if not isinstance(vs, dict) or not _text(vs.get("keyId")) or not _text(vs.get("sig")):
        out.rejections.append(
            Rejection("independent-unsigned", "evidenceTier independent needs a verifierSignature")
        )
        return
    host_ids = (shape.signing_key_id, shape.signature.key_id if shape.signature else None)
    if vs["keyId"] in host_ids:
        out.rejections.append(
            Rejection("independent-self-signed", "the verifier key id is the host's own")
        )
        return
    if verifier_key is None:
        out.rejections.append(
            Rejection(
                "independent-unverifiable",
                "an independent claim needs the verifier's public key; refused, not assumed",
            )
        )
        return
    out.verifier_checked = True
    if vs.get("alg") != "ed25519" or data is None:
        out.rejections.append(
            Rejection("verifier-signature-invalid", "the verifier signature cannot be checked")
        )
        return
    out.verifier_verified = signing.verifies(verifier_key, data, vs["sig"])
    if not out.verifier_verified:
        out.rejections.append(
            Rejection("verifier-signature-invalid", "the verifier attestation does not verify")
        )
