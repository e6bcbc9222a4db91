"""The digests a certification bundle (v3) commits to, in RFC 8785 canonical JSON (pure).

``discovery.sha256`` hashes the captured discovery document; ``witnessSha256`` hashes the
result rows (only their witnessed fields, sorted by id in UTF-16 code-unit order) and, when
the host declares relaxations, those too; the attestation is the canonical text of the four
values the signature covers, keyed by their dotted names.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Final

import rfc8785

SIGNATURE_OVER: Final = ("witnessSha256", "host.build", "suite.version", "discovery.sha256")
WITNESSED: Final = ("id", "scenario", "result", "assertions", "detail", "evidence")


def jcs(value: Any) -> bytes:
    """RFC 8785 bytes of an I-JSON value (``ValueError`` or ``TypeError`` if it is not one)."""
    return rfc8785.dumps(value)


def sha256_hex(value: Any) -> str:
    return hashlib.sha256(jcs(value)).hexdigest()


def utf16_key(text: str) -> bytes:
    """Sort key in UTF-16 code-unit order (what RFC 8785 and RFC 0212 mean by "sorted")."""
    return text.encode("utf-16-be", "surrogatepass")


def witness_rows(requirements: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each row reduced to its witnessed fields, sorted by id in UTF-16 code-unit order."""
    rows = [{k: row[k] for k in WITNESSED if k in row} for row in requirements]
    return sorted(rows, key=lambda row: utf16_key(str(row.get("id", ""))))


def witness_digest(
    requirements: Sequence[Mapping[str, Any]], relaxations: Sequence[Any] | None = None
) -> str:
    rows = witness_rows(requirements)
    if relaxations:
        return sha256_hex({"rows": rows, "relaxations": list(relaxations)})
    return sha256_hex(rows)


def discovery_digest(document: Any) -> str:
    return sha256_hex(document)


def attestation_bytes(
    witness_sha256: str, build: Mapping[str, Any], suite_version: str, discovery_sha256: str
) -> bytes:
    """The exact bytes a bundle's signature (and a verifier's countersignature) covers."""
    return jcs(
        {
            "witnessSha256": witness_sha256,
            "host.build": dict(build),
            "suite.version": suite_version,
            "discovery.sha256": discovery_sha256,
        }
    )
