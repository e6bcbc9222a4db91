"""Signed certification bundles v3 built for the verifier's tests."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

from cryptography.hazmat.primitives import serialization

from openwop_eval.conformance import digests, signing
from openwop_eval.conformance.bundle import PublishedKey

PRIVATE, PUBLIC_PEM, PUBLIC_RAW = signing.generate()
OTHER_PRIVATE, OTHER_PUBLIC_PEM, OTHER_RAW = signing.generate()
VERIFIER_PRIVATE, VERIFIER_PUBLIC_PEM, VERIFIER_RAW = signing.generate()
KEY_ID = "test-host-1"
HOST_KEY = signing.public_key_from_pem(PUBLIC_PEM)
VERIFIER_KEY = signing.public_key_from_pem(VERIFIER_PUBLIC_PEM)
LIVE = (PublishedKey(KEY_ID, PUBLIC_RAW, None, "certification-bundle"),)


def document(**extra: Any) -> dict[str, Any]:
    """A major-2 discovery document that derives discovery-core and core-standard."""
    record = {"status": "experimental", "since": "2.0", "until": "2.1", "witness": "claims-check"}
    doc: dict[str, Any] = {
        "protocolVersions": ["2.0"],
        "preferredVersion": "2.0",
        "signingKeys": [{"keyId": KEY_ID, "alg": "ed25519", "publicKey": PUBLIC_RAW}],
        **{f: dict(record) for f in ("interrupt", "replay", "webhooks", "idempotency", "eventLog")},
    }
    doc.update(extra)
    return doc


def rows() -> list[dict[str, Any]]:
    return [
        {"id": "openwop.floor.v2-era-key", "scenario": "v2-era-key.test.ts",
         "result": "executed-pass", "assertions": 5},
        {"id": "openwop.requirement.0176.era-key", "scenario": "v2-era-key.test.ts",
         "result": "executed-pass", "assertions": 2},
        {"id": "openwop.requirement.0246.trajectory-fail-gates-pass",
         "scenario": "v2-eval-gate.test.ts", "result": "executed-pass", "assertions": 3},
        {"id": "openwop.requirement.0246.mean-gated", "scenario": "v2-eval-gate.test.ts",
         "result": "inapplicable", "assertions": 0,
         "detail": "the host does not advertise evals.trajectoryGate"},
        {"id": "openwop.scenario.v2-run-list", "scenario": "v2-run-list.test.ts",
         "result": "executed-fail", "assertions": 1, "detail": "1 test(s) failed"},
    ]  # fmt: skip


def seal(bundle: dict[str, Any], private: bytes = PRIVATE, key_id: str = KEY_ID) -> dict[str, Any]:
    """Recompute every derived member from the rows and document, then sign."""
    b = copy.deepcopy(bundle)
    reqs = b["results"]["requirements"]
    counted = Counter(r["result"] for r in reqs)
    keys = ("executedPass", "executedFail", "skipped", "inapplicable", "blocked")
    results = ("executed-pass", "executed-fail", "skipped", "inapplicable", "blocked")
    b["results"]["totals"] = {k: counted[r] for k, r in zip(keys, results, strict=True)}
    b["assertionCount"] = sum(r.get("assertions", 0) for r in reqs) or 1
    non_pass = [r for r in reqs if r["result"] != "executed-pass"]
    if non_pass:
        b["detail"] = {
            "nonPass": [
                {"id": r["id"], "result": r["result"], "reason": r["detail"]} for r in non_pass
            ]
        }
    if "document" in b["discovery"]:
        b["discovery"]["sha256"] = digests.discovery_digest(b["discovery"]["document"])
    b["witnessSha256"] = digests.witness_digest(reqs, b["host"].get("relaxations"))
    b["signature"] = {
        "alg": "ed25519",
        "keyId": key_id,
        "sig": "",
        "over": list(digests.SIGNATURE_OVER),
    }
    b["signature"]["sig"] = sign_attestation(b, private)
    return b


def sign_attestation(b: dict[str, Any], private: bytes) -> str:
    data = digests.attestation_bytes(
        b["witnessSha256"], b["host"]["build"], b["suite"]["version"], b["discovery"]["sha256"]
    )
    return signing.sign(signing.private_key_from_pem(private), data)


def bundle(**changes: Any) -> dict[str, Any]:
    """A sealed, verifying bundle; ``changes`` replace root members before sealing."""
    b: dict[str, Any] = {
        "bundleVersion": "3",
        "generatedAt": "2026-09-25T15:06:19.558Z",
        "suite": {
            "name": "@openwop/openwop-conformance",
            "version": "2.39.2",
            "targetMajor": 2,
            "specArtifactsVersion": "2.39.2",
        },
        "host": {
            "name": "test-host",
            "version": "1.0.0",
            "build": {"kind": "commit", "id": "5aa8686ecdfb042ad47dc9d6150bdab1f0fae4b9"},
            "signingKeyId": KEY_ID,
        },
        "discovery": {
            "url": "http://127.0.0.1:3838/.well-known/openwop",
            "sha256": "0" * 64,
            "protocolVersions": ["2.0"],
            "preferredVersion": "2.0",
            "document": document(),
        },
        "claimedProfiles": [
            {"id": "openwop-discovery-core", "evidenceTier": "self", "witnessCount": 1,
             "certified": True},
            {"id": "openwop-core-standard", "evidenceTier": "self", "witnessCount": 1,
             "certified": True},
        ],
        "results": {"totals": {}, "requirements": rows()},
        "witnessSha256": "0" * 64,
        "assertionCount": 1,
        "signature": {},
    }  # fmt: skip
    b.update(changes)
    return seal(b)


def pem_of(private: bytes) -> bytes:
    key = signing.private_key_from_pem(private).public_key()
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
