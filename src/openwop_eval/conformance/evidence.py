"""Signed evidence of a conformance run, in the shape of an OpenWOP certification bundle v3.

The rows are the legs (``openwop.requirement.0246.*``) with their dispositions and assertion
counts; the discovery document is the one the run captured, with its RFC 8785 digest; the
witness digest and the Ed25519 attestation follow the bundle v3 rules in :mod:`.digests`, so
the bundle verifier checks this evidence with the same code as any host's bundle.

It is not the OpenWOP conformance suite's bundle and never claims to be: ``suite.name`` is
this tool, ``suite.version`` its version, and no profile is claimed (``claimedProfiles`` is
empty), so nothing here certifies a profile. Building it is pure: the caller supplies the
time and the key.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from .. import __version__
from . import digests, signing
from .harness import LEG_SCENARIOS, ConformanceResult

SUITE_NAME: Final = "openwop-eval"
SPEC_ARTIFACTS_VERSION: Final = "2.46.13"  # the OpenWOP corpus the legs follow
BUILD_KINDS: Final = ("image-digest", "commit", "artifact-sha256")
_TOTALS: Final = {
    "executed-pass": "executedPass",
    "executed-fail": "executedFail",
    "skipped": "skipped",
    "inapplicable": "inapplicable",
    "blocked": "blocked",
}
_BUILD_ID: Final = re.compile(r"[\x21-\x7e]{1,256}")


@dataclass(frozen=True, slots=True)
class HostBuild:
    """What was tested: ``kind`` is image-digest, commit or artifact-sha256."""

    kind: str
    id: str

    @classmethod
    def parse(cls, text: str) -> HostBuild:
        """``KIND:ID`` (``commit:5aa8686…``), refused with the reason when malformed."""
        kind, sep, ident = text.partition(":")
        if not sep or kind not in BUILD_KINDS:
            raise ValueError(f"a host build is KIND:ID with KIND one of {', '.join(BUILD_KINDS)}")
        if not _BUILD_ID.fullmatch(ident):
            raise ValueError("a host build id is 1 to 256 printable ASCII characters, no spaces")
        return cls(kind, ident)


def rows(result: ConformanceResult) -> list[dict[str, Any]]:
    """One requirement row per leg; every non-pass row carries its detail."""
    strict = " (require-behavior)" if result.require_behavior else ""
    out: list[dict[str, Any]] = []
    for leg in result.legs:
        row: dict[str, Any] = {
            "id": leg.leg,
            "scenario": LEG_SCENARIOS[leg.leg] + strict,
            "result": leg.result,
            "assertions": len(leg.assertions),
        }
        if leg.detail is not None:
            row["detail"] = leg.detail
        out.append(row)
    return out


def _host(result: ConformanceResult, build: HostBuild, key_id: str) -> dict[str, Any]:
    implementation = result.discovery.get("implementation")
    named = implementation if isinstance(implementation, dict) else {}
    host: dict[str, Any] = {
        "name": _text(named.get("name")) or urlsplit(result.host).netloc or result.host,
        "version": _text(named.get("version")) or "unknown",
    }
    if _text(named.get("vendor")):
        host["vendor"] = named["vendor"]
    host["build"] = {"kind": build.kind, "id": build.id}
    host["signingKeyId"] = key_id
    return host


def _discovery(result: ConformanceResult) -> dict[str, Any]:
    document = result.discovery
    versions = document.get("protocolVersions")
    listed = [v for v in versions if isinstance(v, str)] if isinstance(versions, list) else []
    preferred = _text(document.get("preferredVersion"))
    return {
        "url": result.host + "/.well-known/openwop",
        "sha256": digests.discovery_digest(document),
        "protocolVersions": listed or ["2.0"],  # what the run spoke when the host says nothing
        "preferredVersion": preferred or (listed[-1] if listed else "2.0"),
        "document": document,
    }


def build_evidence(
    result: ConformanceResult,
    *,
    build: HostBuild,
    key: Ed25519PrivateKey,
    key_id: str,
    generated_at: str,
) -> dict[str, Any]:
    """The signed evidence bundle of ``result`` (``ValueError`` for an invalid key id)."""
    if not signing.KEY_ID_PATTERN.fullmatch(key_id):
        raise ValueError("a signing key id is 1 to 128 of A-Z a-z 0-9 . _ ~ -")
    requirements = rows(result)
    counts = Counter(row["result"] for row in requirements)
    suite: dict[str, Any] = {
        "name": SUITE_NAME,
        "version": __version__,
        "targetMajor": 2,
        "specArtifactsVersion": SPEC_ARTIFACTS_VERSION,
    }
    bundle: dict[str, Any] = {
        "bundleVersion": "3",
        "generatedAt": generated_at,
        "suite": suite,
        "host": _host(result, build, key_id),
        "discovery": _discovery(result),
        "claimedProfiles": [],
        "results": {
            "totals": {name: counts.get(result_, 0) for result_, name in _TOTALS.items()},
            "requirements": requirements,
        },
    }
    non_pass = [
        {"id": row["id"], "result": row["result"], "reason": row["detail"]}
        for row in requirements
        if row["result"] != "executed-pass"
    ]
    if non_pass:
        bundle["detail"] = {"nonPass": non_pass}
    witness = digests.witness_digest(requirements)
    bundle["witnessSha256"] = witness
    bundle["assertionCount"] = sum(row["assertions"] for row in requirements)
    attested = digests.attestation_bytes(
        witness, bundle["host"]["build"], __version__, bundle["discovery"]["sha256"]
    )
    bundle["signature"] = {
        "alg": "ed25519",
        "keyId": key_id,
        "sig": signing.sign(key, attested),
        "over": list(digests.SIGNATURE_OVER),
    }
    return bundle


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
