"""The I/O shell of the bundle verifier: read a bundle file, fetch a host's live keys.

Reading is bounded (:data:`~.ijson.MAX_BUNDLE_BYTES`) and strict (:func:`~.ijson.parse_ijson`).
A file that is missing, unreadable, over the limit or not JSON is :class:`BundleUnreadableError`
(the verifier's exit 3); valid JSON that is not I-JSON — a duplicate member name, say — is
read but refused (``non-ijson``, exit 1), since two readers could read it two ways.

The live discovery document is fetched with ``GET`` and ``Accept: application/json``,
``OpenWOP-Version: 2.0`` and no credential, within :data:`DEFAULT_TIMEOUT` seconds and
:data:`MAX_DISCOVERY_BYTES`. A redirect is followed only within the same origin (scheme,
host, port), at most :data:`MAX_REDIRECTS` times; one to another origin is refused, since
the keys must be the host's own. Any failure leaves the keys unread (integrity only, exit 2).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from . import signing
from .bundle import PublishedKey, Rejection, Verification, check_bundle
from .ijson import MAX_BUNDLE_BYTES, IJsonError, parse_ijson, snippet

WELL_KNOWN: Final = "/.well-known/openwop"
DEFAULT_TIMEOUT: Final = 10.0
MAX_DISCOVERY_BYTES: Final = 1024 * 1024
MAX_REDIRECTS: Final = 3
HEADERS: Final = {"Accept": "application/json", "OpenWOP-Version": "2.0"}
_KEY_MEMBERS: Final = frozenset({"keyId", "alg", "publicKey", "use", "retiredAt"})


class BundleUnreadableError(Exception):
    """The bundle file could not be read as JSON at all (missing, too large, not JSON)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Discovery:
    """A live discovery lookup: the published keys, or ``None`` when it was not read."""

    url: str
    keys: tuple[PublishedKey, ...] | None
    error: str | None = None
    notes: tuple[str, ...] = ()


def read_bundle(path: Path) -> Any:
    """The parsed bundle; :class:`BundleUnreadableError`, or :class:`IJsonError` if not I-JSON."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_BUNDLE_BYTES + 1)
    except FileNotFoundError:
        raise BundleUnreadableError("missing", f"{snippet(str(path), 200)}: no such file") from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise BundleUnreadableError("unreadable", f"{snippet(str(path), 200)}: {reason}") from None
    try:
        return parse_ijson(data)
    except IJsonError as exc:
        if exc.kind == "non-ijson":
            raise
        raise BundleUnreadableError(exc.kind, f"not JSON: {exc}") from None


def load_public_key(path: Path) -> Ed25519PublicKey:
    """An Ed25519 public key from a PEM file (a private key's PEM gives its public half)."""
    try:
        with path.open("rb") as handle:
            pem = handle.read(signing.MAX_PEM_BYTES + 1)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise signing.SigningKeyError(f"{snippet(str(path), 200)}: {reason}") from None
    return signing.public_key_from_pem(pem)


def discovery_url(url: str) -> str:
    """``<base>/.well-known/openwop`` for a base URL; a URL already ending so, unchanged."""
    parsed = httpx.URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"not an http(s) URL: {snippet(url, 80)}")
    if parsed.path.rstrip("/").endswith(WELL_KNOWN):
        return str(parsed)
    return str(parsed.copy_with(path=parsed.path.rstrip("/") + WELL_KNOWN, query=None))


def signing_keys(document: Any) -> tuple[tuple[PublishedKey, ...], list[str]]:
    """The well-formed ``signingKeys[]`` entries; each malformed one is skipped with a note."""
    entries = document.get("signingKeys") if isinstance(document, dict) else None
    if entries is None:
        return (), ["the document publishes no signingKeys[]"]
    if not isinstance(entries, list):
        return (), ["signingKeys is not an array"]
    keys, notes = [], []
    for i, entry in enumerate(entries):
        problem = _key_problem(entry)
        if problem:
            notes.append(f"signingKeys[{i}] skipped: {problem}")
            continue
        keys.append(
            PublishedKey(
                entry["keyId"], entry["publicKey"], entry.get("retiredAt"), entry.get("use")
            )
        )
    return tuple(keys), notes


def _key_problem(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return "not an object"
    if set(entry) - _KEY_MEMBERS:
        return "unknown members (the entry is closed)"
    key_id, public = entry.get("keyId"), entry.get("publicKey")
    if not isinstance(key_id, str) or not signing.KEY_ID_PATTERN.fullmatch(key_id):
        return "keyId is not [A-Za-z0-9._~-]{1,128}"
    if entry.get("alg") != "ed25519":
        return 'alg is not "ed25519"'
    if not isinstance(public, str) or not signing.PUBLIC_KEY_PATTERN.fullmatch(public):
        return "publicKey is not 43 base64url characters"
    if entry.get("use", "certification-bundle") != "certification-bundle":
        return 'use is not "certification-bundle"'
    if not isinstance(entry.get("retiredAt", ""), str):
        return "retiredAt is not a string"
    return None


def fetch_discovery(
    url: str, *, timeout: float = DEFAULT_TIMEOUT, transport: httpx.BaseTransport | None = None
) -> Discovery:
    """GET the live discovery document at ``url`` (a base URL or the well-known URL)."""
    try:
        target = httpx.URL(discovery_url(url))
    except (ValueError, httpx.InvalidURL) as exc:
        return Discovery(snippet(url, 200), None, str(exc))
    shown = snippet(str(target), 200)
    try:
        with httpx.Client(
            timeout=timeout, follow_redirects=False, headers=HEADERS, transport=transport
        ) as client:
            body = _get(client, target)
    except _RefusedError as exc:
        return Discovery(shown, None, str(exc))
    except httpx.InvalidURL:
        return Discovery(shown, None, "the host answered with an invalid redirect")
    except httpx.HTTPError as exc:
        return Discovery(shown, None, f"the request failed ({type(exc).__name__})")
    try:
        document = parse_ijson(body, max_bytes=MAX_DISCOVERY_BYTES)
    except IJsonError as exc:
        return Discovery(shown, None, f"the document is not I-JSON: {exc}")
    if not isinstance(document, dict):
        return Discovery(shown, None, "the document is not a JSON object")
    keys, notes = signing_keys(document)
    return Discovery(shown, keys, None, tuple(notes))


class _RefusedError(Exception):
    """A response the verifier will not use (status, size, a cross-origin redirect)."""


def _get(client: httpx.Client, url: httpx.URL) -> bytes:
    origin = (url.scheme, url.host, url.port)
    for _ in range(MAX_REDIRECTS + 1):
        with client.stream("GET", url) as response:
            if response.is_redirect:
                url = url.join(response.headers.get("location", ""))
                if (url.scheme, url.host, url.port) != origin:
                    raise _RefusedError(
                        f"redirected to another origin ({snippet(str(url), 120)}); not followed"
                    )
                continue
            if response.status_code != 200:
                raise _RefusedError(f"answered HTTP {response.status_code}")
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_DISCOVERY_BYTES:
                raise _RefusedError(f"the document is over {MAX_DISCOVERY_BYTES} bytes")
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_DISCOVERY_BYTES:
                    raise _RefusedError(f"the document is over {MAX_DISCOVERY_BYTES} bytes")
            return bytes(body)
    raise _RefusedError(f"more than {MAX_REDIRECTS} redirects")


def verify_file(
    path: Path,
    *,
    host_key: Ed25519PublicKey | None = None,
    discovery: Discovery | None = None,
    verifier_key: Ed25519PublicKey | None = None,
) -> Verification:
    """Read and verify one bundle file; :class:`BundleUnreadableError` if it is not JSON."""
    try:
        bundle = read_bundle(path)
    except IJsonError as exc:
        return Verification.refusal(Rejection("non-ijson", f"the bundle is not I-JSON: {exc}"))
    live = discovery.keys if discovery is not None else None
    result = check_bundle(bundle, host_key=host_key, live_keys=live, verifier_key=verifier_key)
    if discovery is not None and discovery.keys is None:  # asked for, not read: integrity only
        return replace(result, discovery_error=discovery.error or "not read")
    return result
