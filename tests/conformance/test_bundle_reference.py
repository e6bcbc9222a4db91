"""The verifier against published evidence: the digest's §9 vector and real host bundles.

The bundles in ``tests/fixtures/bundles`` are byte-for-byte copies of files in
``openwop/openwop`` (``evidence/v2-host-bundles``; see ``SOURCES.md`` there). Each is
verified with its own captured document's ``signingKeys[]`` standing in for the live ones.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from openwop_eval.conformance import digests, signing
from openwop_eval.conformance.bundle import check_bundle
from openwop_eval.conformance.verifier import read_bundle, signing_keys

BUNDLES = Path(__file__).parent.parent / "fixtures" / "bundles"
REFERENCE = BUNDLES / "openwop-host-v2-reference.json"
COMPANION = BUNDLES / "openwop-app-colocated-companion-2.41.0.json"
TOTAL_CHARS = {REFERENCE: 132_022, COMPANION: 204_743}
"""What the store reported as each file's ``total_chars`` when it was copied."""

PUBLIC_KEY = "F588CksLq-PVrpqTFhYcweE4WFYOcj6-jyjz7KmKipU"
SIG = "-KgW3XhWsCyxAqwRp6JBMjKsex-drU0F_J8aXGA-yNP16jx-8aSHSK53HfXXZDbbH5RKE51YIJCgFslz0iZVCQ"
SIGNED = (
    b'{"discovery.sha256":"d14776292b08b7a84bf2bbf81165ebaa8345715229e18483363fad1f5f1bee46",'
    b'"host.build":{"id":"5aa8686ecdfb042ad47dc9d6150bdab1f0fae4b9","kind":"commit"},'
    b'"suite.version":"2.39.2",'
    b'"witnessSha256":"cb0486af6a39ef982540ba24a947bfebcac8fafca5e8b2ed5c1046844dae6c00"}'
)


def flip(text: str, index: int) -> str:
    """``text`` with one base64url character changed (never to a non-canonical tail)."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    return text[:index] + alphabet[(alphabet.index(text[index]) + 1) % 64] + text[index + 1 :]


def test_the_section_9_vector_verifies() -> None:
    bundle = read_bundle(REFERENCE)
    data = digests.attestation_bytes(
        bundle["witnessSha256"],
        bundle["host"]["build"],
        bundle["suite"]["version"],
        bundle["discovery"]["sha256"],
    )
    assert data == SIGNED
    assert bundle["signature"]["sig"] == SIG
    assert signing.verifies(signing.public_key_from_raw(PUBLIC_KEY), SIGNED, SIG)


def test_one_changed_byte_fails_the_vector() -> None:
    key = signing.public_key_from_raw(PUBLIC_KEY)
    assert not signing.verifies(signing.public_key_from_raw(flip(PUBLIC_KEY, 5)), SIGNED, SIG)
    assert not signing.verifies(key, SIGNED, flip(SIG, 10))
    assert not signing.verifies(key, SIGNED.replace(b"2.39.2", b"2.39.3"), SIG)
    tampered = bytearray(SIGNED)
    tampered[40] ^= 0x01
    assert not signing.verifies(key, bytes(tampered), SIG)


@pytest.mark.parametrize("path", sorted(TOTAL_CHARS))
def test_the_copies_are_whole(path: Path) -> None:
    text = path.read_text("utf-8")
    assert len(text) == TOTAL_CHARS[path]
    assert json.loads(text)["bundleVersion"] == "3"


def test_the_packaged_profile_registry_is_the_stored_file() -> None:
    text = (resources.files("openwop_eval.conformance") / "data" / "profiles.json").read_text(
        "utf-8"
    )
    assert len(text) == 7053
    assert [p["id"] for p in json.loads(text)["profiles"]] == [
        "openwop-discovery-core",
        "openwop-core-standard",
        "openwop-conformance-seams-v2",
    ]


def test_the_reference_host_bundle_verifies_whole() -> None:
    bundle = read_bundle(REFERENCE)
    rows = bundle["results"]["requirements"]
    assert (
        digests.witness_digest(rows, bundle["host"].get("relaxations")) == bundle["witnessSha256"]
    )
    document = bundle["discovery"]["document"]
    assert digests.discovery_digest(document) == bundle["discovery"]["sha256"]
    keys, notes = signing_keys(document)
    assert notes == []
    result = check_bundle(bundle, live_keys=keys)
    assert result.rejections == ()
    assert result.exit_code == 0
    assert result.verdict == "verified"
    assert result.key_source == "discovery"
    assert result.key_id == "v2-reference-4"
    assert result.derivability_checked
    assert result.certified_profiles == (
        "openwop-discovery-core",
        "openwop-core-standard",
        "openwop-conformance-seams-v2",
    )
    # its durability rung re-derives, its opt-outs are not advertised, it claims no 0246 row
    assert result.opted_out == ("connections.packsSupported", "family.forms", "family.memory")
    assert result.undetermined == ()
    assert result.rfc0246 == ()
    # an executed-fail off every floor does not block certification (4 in this bundle)
    assert bundle["results"]["totals"]["executedFail"] == 4


def test_the_reference_bundle_without_keys_is_coherent_but_unverified() -> None:
    result = check_bundle(read_bundle(REFERENCE))
    assert result.rejections == ()
    assert result.exit_code == 2
    assert not result.signature_checked


def test_the_companion_bundle_fails_its_witness_digest() -> None:
    """A published bundle that genuinely fails one check: ``witness-digest``.

    Its signature verifies under the published ``openwop-app-companion-1`` key and its
    captured document hashes to ``discovery.sha256``, so the signed values and the document
    are intact; but the rows as published do not hash to the signed ``witnessSha256``
    (UTF-16 order, code-point order, the unsorted order and a punctuation-blind collation
    were all tried). The copy is whole — its length is the stored ``total_chars`` — and
    self-consistent: ``detail.nonPass`` repeats every non-pass row's reason exactly, each
    file row's assertions equal the sum of its test rows, and ``assertionCount`` equals the
    sum. The file also carries ``host.deployment``, a member the schema's closed ``host``
    object does not allow, so it was edited after the suite emitted it. Whether the rows
    were edited too, or its emitter hashed them by another rule, the file cannot say; what
    it shows is that its rows are not the ones the signature attests to.
    """
    bundle = read_bundle(COMPANION)
    keys, _ = signing_keys(bundle["discovery"]["document"])
    assert [k.key_id for k in keys if k.retired_at] == [
        "openwop-app-bundle-1",
        "openwop-app-self-2026-09-04",
    ]
    result = check_bundle(bundle, live_keys=keys)
    assert [r.name for r in result.rejections] == ["witness-digest"]
    assert result.signature_verified
    assert result.derivability_checked
    assert result.certified_profiles == ()
    assert result.exit_code == 1
    assert any("host member 'deployment'" in n for n in result.notes)
    assert (
        digests.discovery_digest(bundle["discovery"]["document"]) == bundle["discovery"]["sha256"]
    )
    reasons = {e["id"]: e["reason"] for e in bundle["detail"]["nonPass"]}
    non_pass = [r for r in bundle["results"]["requirements"] if r["result"] != "executed-pass"]
    assert {r["id"]: r["detail"] for r in non_pass} == reasons
