"""Every check of the bundle verifier (digest §7) refuses its tampering, by name."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openwop_eval.conformance import digests, signing
from openwop_eval.conformance.bundle import PublishedKey, Verification, check_bundle
from tests.conformance.bundles import (
    HOST_KEY,
    KEY_ID,
    LIVE,
    OTHER_RAW,
    PRIVATE,
    PUBLIC_PEM,
    PUBLIC_RAW,
    VERIFIER_KEY,
    VERIFIER_PRIVATE,
    bundle,
    document,
    pem_of,
    rows,
    seal,
    sign_attestation,
)


def test_the_built_bundle_verifies() -> None:
    result = check_bundle(bundle(), live_keys=LIVE)
    assert result.rejections == ()
    assert result.exit_code == 0
    assert result.certified_profiles == ("openwop-discovery-core", "openwop-core-standard")
    assert pem_of(PRIVATE) == PUBLIC_PEM


def names(result: Verification) -> set[str]:
    return {r.name for r in result.rejections}


def verify(b: Any, **kwargs: Any) -> Verification:
    kwargs.setdefault("live_keys", LIVE)
    return check_bundle(b, **kwargs)


def row(rid: str, result: str = "executed-pass", assertions: int = 1, **more: Any) -> dict:
    return {"id": rid, "scenario": "x.test.ts", "result": result, "assertions": assertions, **more}


def with_rows(extra: list[dict[str, Any]], **changes: Any) -> dict[str, Any]:
    b = bundle(**changes)
    b["results"]["requirements"] += extra
    return seal(b)


# -- unsigned edits of signed content -------------------------------------------------------


def test_a_changed_result_breaks_the_witness_digest() -> None:
    b = bundle()
    b["results"]["requirements"][0]["result"] = "executed-fail"
    b["results"]["requirements"][0]["detail"] = "edited"
    assert {"witness-digest", "totals-mismatch"} <= names(verify(b))


def test_a_changed_assertion_count_on_a_row() -> None:
    b = bundle()
    b["results"]["requirements"][0]["assertions"] += 1
    assert {"witness-digest", "assertion-count"} <= names(verify(b))


def test_a_changed_total_or_assertion_count() -> None:
    b = bundle()
    b["results"]["totals"]["executedPass"] += 1
    assert names(verify(b)) == {"totals-mismatch"}
    b = bundle()
    b["assertionCount"] += 1
    assert names(verify(b)) == {"assertion-count"}


def test_a_substituted_discovery_document() -> None:
    b = bundle()
    b["discovery"]["document"]["sandbox"] = {"status": "stable"}
    assert names(verify(b)) == {"discovery-digest"}
    b = bundle()
    b["discovery"]["sha256"] = "a" * 64  # signed: the attestation no longer verifies either
    assert names(verify(b)) == {"discovery-digest", "signature-invalid"}


def test_stripping_a_declared_relaxation_breaks_the_digest() -> None:
    relaxation = {"obligation": "webhooks.egress-guard", "durability": "session", "reason": "lab"}
    b = bundle(host={**bundle()["host"], "relaxations": [relaxation]})
    del b["host"]["relaxations"]
    assert "witness-digest" in names(verify(b))


def test_signature_fields() -> None:
    b = bundle()
    b["signature"]["keyId"] = "someone-else"
    assert names(verify(b)) == {"key-not-published"}
    assert verify(b, live_keys=None, host_key=HOST_KEY).exit_code == 0  # keyId is not signed
    b = bundle()
    b["signature"]["over"] = list(reversed(digests.SIGNATURE_OVER))
    assert names(verify(b)) == {"signature-over"}
    b = bundle()
    b["signature"]["alg"] = "rsa"
    assert names(verify(b)) == {"signature-missing"}
    b = bundle()
    del b["signature"]
    assert names(verify(b)) == {"signature-missing"}
    b = bundle()
    sig = b["signature"]["sig"]
    b["signature"]["sig"] = ("B" if sig[0] == "A" else "A") + sig[1:]
    assert names(verify(b)) == {"signature-invalid"}
    b = bundle()
    b["signature"]["keyId"] = "bad key id"
    assert names(verify(b)) == {"shape"}


# -- row and count coherence -----------------------------------------------------------------


def test_dropped_detail_block() -> None:
    b = bundle()
    del b["detail"]
    assert names(verify(b)) == {"detail-missing"}


def test_duplicate_rows() -> None:
    b = with_rows([rows()[0]])
    assert names(verify(b)) == {"duplicate-requirement"}


def test_vacuous_passes() -> None:
    b = with_rows([row("openwop.requirement.0999.zero", assertions=0)])
    assert names(verify(b)) == {"vacuous-pass"}
    no_count = row("openwop.requirement.0999.none")
    del no_count["assertions"]
    assert names(verify(with_rows([no_count]))) == {"vacuous-pass"}


def test_a_non_pass_row_without_reason() -> None:
    b = with_rows([row("openwop.requirement.0999.silent", "skipped", 0, detail="  ")])
    assert names(verify(b)) == {"reason-missing"}


def test_build_missing() -> None:
    b = bundle()
    b["host"]["build"] = {"kind": "commit", "id": ""}
    assert "build-missing" in names(verify(b))
    b = bundle()
    del b["host"]["build"]
    assert "build-missing" in names(verify(b))


def test_blocked_rows_certify_nothing() -> None:
    b = with_rows([row("openwop.requirement.0999.seam", "blocked", 0, detail="no seam")])
    result = verify(b)
    assert names(result) == {"blocked-certified"}
    assert result.certified_profiles == ()


# -- the independent tier ----------------------------------------------------------------


def independent(verifier: dict[str, Any] | None) -> dict[str, Any]:
    b = bundle()
    for claim in b["claimedProfiles"]:
        claim["evidenceTier"] = "independent"
    if verifier is not None:
        b["verifierSignature"] = verifier
    return b


def countersign(b: dict[str, Any], key_id: str = "verifier-org-1") -> dict[str, Any]:
    return {"alg": "ed25519", "keyId": key_id, "sig": sign_attestation(b, VERIFIER_PRIVATE)}


def test_independent_without_a_verifier_signature() -> None:
    assert names(verify(independent(None))) == {"independent-unsigned"}


def test_independent_self_signed() -> None:
    b = independent(None)
    b["verifierSignature"] = countersign(b, KEY_ID)
    assert names(verify(b, verifier_key=VERIFIER_KEY)) == {"independent-self-signed"}


def test_independent_verified_unverifiable_and_invalid() -> None:
    b = independent(None)
    b["verifierSignature"] = countersign(b)
    ok = verify(b, verifier_key=VERIFIER_KEY)
    assert ok.rejections == ()
    assert ok.exit_code == 0
    assert ok.verifier_signature_verified
    unverifiable = verify(b)
    assert names(unverifiable) == {"independent-unverifiable"}
    assert unverifiable.exit_code == 2
    assert unverifiable.certified_profiles == ()
    assert names(verify(b, verifier_key=HOST_KEY)) == {"verifier-signature-invalid"}


# -- relaxations, rungs, derivability, opt-outs ---------------------------------------------


def test_a_declared_relaxation_denies_only_the_profile_owning_it() -> None:
    relaxation = {"obligation": "webhooks.egress-guard", "durability": "session", "reason": "lab"}
    result = verify(bundle(host={**bundle()["host"], "relaxations": [relaxation]}))
    assert [(r.name, r.profile) for r in result.rejections] == [
        ("relaxed-profile-certified", "openwop-core-standard")
    ]
    assert result.certified_profiles == ("openwop-discovery-core",)
    assert result.exit_code == 1


def test_an_observed_relaxation_nobody_declared() -> None:
    egress = row(
        "openwop.requirement.0171.webhook-egress-refused", "executed-fail", 1, detail="accepted"
    )
    result = verify(with_rows([egress]))
    assert [(r.name, r.profile) for r in result.rejections] == [
        ("undeclared-relaxation-observed", "openwop-core-standard")
    ]
    assert result.certified_profiles == ("openwop-discovery-core",)


def rung_rows(observed: int = 1700) -> list[dict[str, Any]]:
    r = "openwop.requirement.0158."
    bounds = [{"class": "restart", "bound": 6000, "terms": [{"name": "delay", "ms": 6000}]}]
    recovery = {"recovery": {"class": "restart", "boundMs": 6000, "observedMs": observed}}
    return [
        row(r + "bound-is-derived", evidence={"recoveryBounds": bounds}),
        row(r + "kill-after-accept", evidence=recovery),
        row(r + "kill-during-execution", evidence=recovery),
        row(r + "duplicate-delivery"),
        row(r + "poison-exhaustion"),
    ]


def test_a_durability_rung_must_rederive() -> None:
    assert names(verify(bundle(durability={"rung": "durable-single-instance"}))) == {
        "rung-not-derivable"
    }
    good = with_rows(rung_rows(), durability={"rung": "durable-single-instance"})
    assert verify(good).rejections == ()
    slow = with_rows(rung_rows(7000), durability={"rung": "durable-single-instance"})
    assert names(verify(slow)) == {"rung-not-derivable"}
    higher = verify(with_rows(rung_rows(), durability={"rung": "durable-multi-instance"}))
    assert names(higher) == {"rung-not-derivable"}
    assert any("higher rungs" in u for u in higher.undetermined)


def test_a_certified_profile_must_derive_from_the_document() -> None:
    doc = document()
    del doc["webhooks"]
    b = bundle()
    b["discovery"]["document"] = doc
    result = verify(seal(b))
    assert [(r.name, r.profile) for r in result.rejections] == [
        ("profile-not-derivable", "openwop-core-standard")
    ]
    assert result.certified_profiles == ("openwop-discovery-core",)


@pytest.mark.parametrize(
    ("rid", "detail"),
    [
        ("openwop.it.x.y", "an honest opt-out via OPENWOP_OPTED_OUT_PROFILES: family.webhooks"),
        ("openwop.profile.family.webhooks", "opted out (OPENWOP_OPTED_OUT_PROFILES)"),
        ("openwop.it.x.z", "OPENWOP_OPTED_OUT_PROFILES: openwop-core-standard"),
    ],
)  # fmt: skip
def test_an_advertised_opt_out(rid: str, detail: str) -> None:
    result = verify(with_rows([row(rid, "skipped", 0, detail=detail)]))
    assert names(result) == {"opted-out-but-advertised"}
    assert result.certified_profiles == ()


def test_an_opt_out_no_rule_decides_is_recorded_not_passed() -> None:
    detail = "operator declared an honest opt-out via OPENWOP_OPTED_OUT_PROFILES: webhooks.retry"
    b = bundle()
    b["discovery"]["document"]["webhooks"]["retry"] = {"maxAttempts": 5}
    b["results"]["requirements"].append(row("openwop.it.x.y", "skipped", 0, detail=detail))
    result = verify(seal(b))
    assert result.rejections == ()
    assert result.opted_out == ("webhooks.retry",)
    assert any("webhooks.retry" in u for u in result.undetermined)
    absent = detail.replace("webhooks.retry", "connections.packsSupported")
    quiet = verify(with_rows([row("openwop.it.x.y", "skipped", 0, detail=absent)]))
    assert quiet.rejections == ()
    assert quiet.undetermined == ()


def test_without_a_document_or_registry_derivability_is_a_gap() -> None:
    b = bundle()
    del b["discovery"]["document"]
    no_doc = verify(seal(b))
    assert no_doc.rejections == ()
    assert not no_doc.derivability_checked
    assert no_doc.exit_code == 2
    no_registry = verify(bundle(), registry=None)
    assert no_registry.exit_code == 2
    assert no_registry.undetermined
    major_one = bundle()
    major_one["suite"]["targetMajor"] = 1
    v1 = verify(seal(major_one))
    assert v1.exit_code == 2
    assert any("major 1" in u for u in v1.undetermined)


def test_shape_rejections() -> None:
    assert names(verify(bundle(bundleVersion="2"))) == {"bundle-version"}
    coherence = row("openwop.it.v2-path-parity.every-path", "executed-pass")
    assert names(verify(with_rows([coherence]))) == {"row-id"}
    b = bundle()
    b["results"]["requirements"][1]["assertions"] = "2"
    result = verify(b)
    assert "shape" in names(result)
    assert any("/results/requirements/1/assertions" in r.message for r in result.rejections)


# -- the three key states ----------------------------------------------------------------


def test_key_states_stay_apart() -> None:
    b = bundle()
    unread = verify(b, live_keys=None)
    assert unread.rejections == ()
    assert not unread.signature_checked
    assert unread.exit_code == 2
    unpublished = verify(b, live_keys=(PublishedKey("another-key", PUBLIC_RAW),))
    assert names(unpublished) == {"key-not-published"}
    assert unpublished.exit_code == 1
    wrong = verify(b, live_keys=(PublishedKey(KEY_ID, OTHER_RAW),))
    assert names(wrong) == {"signature-invalid"}
    assert wrong.exit_code == 1
    pem = verify(b, live_keys=None, host_key=HOST_KEY)
    assert pem.exit_code == 0
    assert pem.key_source == "pem"
    live = verify(b)
    assert live.exit_code == 0
    assert live.key_source == "discovery"
    assert live.key_id == KEY_ID


def test_a_retired_but_listed_key_verifies_older_bundles_only() -> None:
    b = bundle()
    later = verify(b, live_keys=(PublishedKey(KEY_ID, PUBLIC_RAW, "2026-10-01T00:00:00Z"),))
    assert later.exit_code == 0
    assert later.key_retired_at == "2026-10-01T00:00:00Z"
    earlier = verify(b, live_keys=(PublishedKey(KEY_ID, PUBLIC_RAW, "2026-09-01T00:00:00Z"),))
    assert names(earlier) == {"key-retired"}


def test_the_result_is_json() -> None:
    result = verify(bundle())
    data = json.loads(json.dumps(result.as_dict()))
    assert data["verdict"] == "verified"
    assert data["exitCode"] == 0
    assert [c["id"] for c in data["rfc0246"]] == [
        "openwop.requirement.0246.trajectory-fail-gates-pass",
        "openwop.requirement.0246.mean-gated",
    ]


# -- hostile input -------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
BASE = bundle()


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            out += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += paths(item, (*prefix, index))
    return out


PATHS = paths(BASE)


def json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number" if isinstance(value, int | float) else type(value).__name__


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.sampled_from(PATHS), JSON)
def test_a_type_changing_mutation_is_refused_never_raised(path: tuple[Any, ...], new: Any) -> None:
    b = copy.deepcopy(BASE)
    parent = b
    for step in path[:-1]:
        parent = parent[step]
    old = parent[path[-1]]
    parent[path[-1]] = new
    result = check_bundle(b, live_keys=LIVE, host_key=HOST_KEY, verifier_key=VERIFIER_KEY)
    if json_type(old) != json_type(new):
        assert result.rejections, (path, new)


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_random_json_is_refused_never_raised(value: Any) -> None:
    result = check_bundle(value, live_keys=LIVE, host_key=HOST_KEY)
    assert result.rejections
    assert result.exit_code == 1


def test_non_ijson_values_passed_directly_are_refused() -> None:
    b = bundle()
    b["results"]["requirements"][0]["detail"] = float("nan")
    assert "shape" in names(check_bundle(b))
    b = bundle()
    b["discovery"]["document"]["limits"] = {"max": float("inf")}
    assert "non-ijson" in names(check_bundle(b))
    assert signing.KEY_ID_PATTERN.fullmatch(KEY_ID)
