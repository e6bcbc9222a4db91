"""The shape of a certification bundle v3, read defensively (pure).

Every member the verifier relies on is type-checked where it is read, and a bad one becomes
a located rejection (``shape`` and friends, with a JSON pointer) — hostile input never
raises. Members the verifier does not need are not policed beyond their JSON type: schema
validation is the emitter's step (``schemas/v2/certification-bundle.schema.json``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, TypeGuard

from .ijson import pointer, snippet
from .signing import KEY_ID_PATTERN, SIGNATURE_PATTERN

HEX64: Final = re.compile(r"[0-9a-f]{64}")
RESULTS: Final = ("executed-pass", "executed-fail", "skipped", "inapplicable", "blocked")
TOTAL_KEYS: Final = dict(
    zip(
        RESULTS, ("executedPass", "executedFail", "skipped", "inapplicable", "blocked"), strict=True
    )
)
ROOT_MEMBERS: Final = frozenset(
    {
        "bundleVersion",
        "generatedAt",
        "suite",
        "host",
        "discovery",
        "claimedProfiles",
        "results",
        "witnessSha256",
        "assertionCount",
        "detail",
        "durability",
        "signature",
        "verifierSignature",
    }
)
HOST_MEMBERS: Final = frozenset(
    {"name", "version", "vendor", "build", "signingKeyId", "relaxations"}
)
TIERS: Final = ("self", "steward", "independent")
BUILD_KINDS: Final = ("image-digest", "commit", "artifact-sha256")
DURABILITY: Final = ("session", "deployment", "persisted")
ROW_ID: Final = re.compile(r"openwop\.(requirement|it|scenario|floor|profile|family)\.[a-z0-9]")
# Ids minted from corpus-coherence files (RFC 0168 §D.1): they run in the spec repo's CI and
# must never appear in a host bundle. The list is the schema's lookahead, as stored.
COHERENCE_FILES: Final = frozenset(
    """artifact-schema-compile-bounded artifact-type-legacy-ids capability-example-root-layout
    certification-floor-enforcement chain-subchain-unsupported-refused compensation-profile
    core-manifest-and-extension-registry discovery-canonical-family-no-shadow
    edge-condition-truthy-falsy effect-identity-composition effect-identity-cross-scope
    error-envelope-canonical-shape event-codemap-complete form-content-packs
    multi-region-effect-vocabulary node-pack-mcp-server-record normative-example-extraction
    openapi-asyncapi-sdk-parity pack-manifest-extensions protocol-version-grammar
    registry-declarative-kinds rfc-0147-self-audit rfc-lifecycle-coherence semantic-digest-v2
    spec-corpus-validity spec-section-citations tool-result-trust-monotone
    v2-alias-covers-reword v2-bundle-signature-attributable v2-corpus-tag-pinned
    v2-declaration-parity v2-envelope-catalog v2-eos-clock v2-error-registry-prose-parity
    v2-event-naming-rule v2-events-channel-parity v2-externally-gated-never-stable
    v2-facet-advertisement v2-front-door-counts v2-id-kinds-bound v2-normative-home-gate
    v2-one-signing-scheme v2-path-parity v2-release-identity v2-req-only-assertions
    v2-retention-floors v2-seams-not-in-canonical v2-security-defaults-table
    v2-spec-artifacts-digest v2-threat-model-template v2-umbrella-alias-covered
    v2-umbrella-child-parts v2-umbrella-codemod-at-active v2-umbrella-codemod-legs
    v2-umbrella-migration-deprecation v2-witness-required versioned-composition-profiles
    workflow-chain-internal-flag workload-identity-profile""".split()  # noqa: SIM905
)
ABSENT: Final = object()
"""A member the bundle does not carry (distinct from JSON ``null``)."""
Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Rejection:
    """One refused check: its name, a located reason, and the profile it is scoped to."""

    name: str
    message: str
    profile: str | None = None


@dataclass(frozen=True)
class ProfileClaim:
    id: str
    tier: str
    certified: bool


@dataclass(frozen=True)
class Signature:
    alg: Any
    key_id: Any
    sig: Any
    over: Any


@dataclass
class Shape:
    """What the reader found: typed values where the bundle is well formed, else ``None``."""

    rejections: list[Rejection] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    generated_at: datetime | None = None
    suite_name: str | None = None
    suite_version: str | None = None
    target_major: int | None = None
    host_name: str | None = None
    host_version: str | None = None
    host_vendor: str | None = None
    build: dict[str, Any] | None = None
    signing_key_id: str | None = None
    relaxations: list[Any] = field(default_factory=list)
    discovery_url: str | None = None
    discovery_sha256: str | None = None
    document: Any = ABSENT
    profiles: list[ProfileClaim] = field(default_factory=list)
    totals: dict[str, int] | None = None
    rows: list[dict[str, Any]] | None = None
    raw_rows: list[Any] = field(default_factory=list)
    witness_sha256: str | None = None
    assertion_count: int | None = None
    has_detail: bool = False
    rung: Any = ABSENT
    signature: Signature | None = None
    verifier_signature: Any = ABSENT

    def reject(self, name: str, message: str, path: Path = (), profile: str | None = None) -> None:
        where = f" (at {pointer(path)})" if path else ""
        self.rejections.append(Rejection(name, message + where, profile))


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _get(shape: Shape, parent: Mapping[str, Any], key: str, path: Path, kind: type) -> Any:
    """``parent[key]`` if it has JSON type ``kind``; ``ABSENT`` if missing; else rejected."""
    if key not in parent:
        return ABSENT
    value = parent[key]
    ok = _is_int(value) if kind is int else isinstance(value, kind)
    if not ok:
        names = {str: "a string", int: "an integer", bool: "a boolean", dict: "an object"}
        shape.reject("shape", f"expected {names.get(kind, 'an array')}", (*path, key))
        return None
    return value


def _need(shape: Shape, parent: Mapping[str, Any], key: str, path: Path, kind: type) -> Any:
    value = _get(shape, parent, key, path, kind)
    if value is ABSENT:
        shape.reject("shape", "a required member is missing", (*path, key))
        return None
    return value


def read(bundle: Any) -> Shape:
    """Read ``bundle`` (any JSON value) into a :class:`Shape` with located rejections."""
    shape = Shape()
    if not isinstance(bundle, dict):
        shape.reject("shape", "a bundle is a JSON object")
        return shape
    version = bundle.get("bundleVersion", ABSENT)
    if version != "3" or not isinstance(version, str):
        shown = "missing" if version is ABSENT else snippet(repr(version), 24)
        shape.reject(
            "bundle-version", f'bundleVersion is {shown}, expected "3"', ("bundleVersion",)
        )
    for name in sorted(set(bundle) - ROOT_MEMBERS, key=str)[:8]:
        shape.notes.append(f"root member {snippet(name)!r} is outside the closed v3 root")
    _read_header(shape, bundle)
    _read_results(shape, bundle)
    _read_signatures(shape, bundle)
    return shape


def _timestamp(text: str) -> datetime | None:
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else None


def _read_header(shape: Shape, b: dict[str, Any]) -> None:
    stamp = _need(shape, b, "generatedAt", (), str)
    if isinstance(stamp, str):
        shape.generated_at = _timestamp(stamp)
        if shape.generated_at is None:
            shape.reject("shape", "not an RFC 3339 date-time with a zone", ("generatedAt",))
    if isinstance(suite := _need(shape, b, "suite", (), dict), dict):
        p: Path = ("suite",)
        shape.suite_name = _need(shape, suite, "name", p, str)
        shape.suite_version = _need(shape, suite, "version", p, str)
        _need(shape, suite, "specArtifactsVersion", p, str)
        major = _need(shape, suite, "targetMajor", p, int)
        if _is_int(major) and major not in (1, 2):
            shape.reject("shape", "targetMajor is 1 or 2", (*p, "targetMajor"))
        shape.target_major = major if major in (1, 2) else None
        stamp_sha = _get(shape, suite, "stampSha256", p, str)
        if isinstance(stamp_sha, str) and not HEX64.fullmatch(stamp_sha):
            shape.reject("shape", "not 64 lowercase hex digits", (*p, "stampSha256"))
    if isinstance(host := _need(shape, b, "host", (), dict), dict):
        _read_host(shape, host)
    if isinstance(disc := _need(shape, b, "discovery", (), dict), dict):
        p = ("discovery",)
        shape.discovery_url = _need(shape, disc, "url", p, str)
        sha = _need(shape, disc, "sha256", p, str)
        if isinstance(sha, str) and not HEX64.fullmatch(sha):
            shape.reject("shape", "not 64 lowercase hex digits", (*p, "sha256"))
        shape.discovery_sha256 = sha
        versions = _need(shape, disc, "protocolVersions", p, list)
        if isinstance(versions, list) and not all(isinstance(v, str) for v in versions):
            shape.reject("shape", "expected an array of strings", (*p, "protocolVersions"))
        _need(shape, disc, "preferredVersion", p, str)
        document = _get(shape, disc, "document", p, dict)
        shape.document = document if document is not None else ABSENT
    if isinstance(claims := _need(shape, b, "claimedProfiles", (), list), list):
        for i, claim in enumerate(claims):
            _read_claim(shape, claim, ("claimedProfiles", i))


def _read_host(shape: Shape, host: dict[str, Any]) -> None:
    p: Path = ("host",)
    for name in sorted(set(host) - HOST_MEMBERS, key=str)[:8]:
        shape.notes.append(f"host member {snippet(name)!r} is outside the closed v3 host object")
    shape.host_name = _need(shape, host, "name", p, str)
    shape.host_version = _need(shape, host, "version", p, str)
    vendor = _get(shape, host, "vendor", p, str)
    shape.host_vendor = vendor if isinstance(vendor, str) else None
    build = _get(shape, host, "build", p, dict)
    if not isinstance(build, dict) or not build.get("kind") or not build.get("id"):
        shape.reject("build-missing", "host.build.{kind, id} is required", (*p, "build"))
    else:
        kind, build_id = build["kind"], build["id"]
        if kind not in BUILD_KINDS or not isinstance(kind, str):
            shape.reject("shape", "kind is image-digest, commit or artifact-sha256", (*p, "build"))
        elif not isinstance(build_id, str):
            shape.reject("shape", "expected a string", (*p, "build", "id"))
        else:
            shape.build = build
    key_id = _get(shape, host, "signingKeyId", p, str)
    if isinstance(key_id, str):
        if KEY_ID_PATTERN.fullmatch(key_id):
            shape.signing_key_id = key_id
        else:
            shape.reject("shape", "not a keyId ([A-Za-z0-9._~-]{1,128})", (*p, "signingKeyId"))
    relaxations = _get(shape, host, "relaxations", p, list)
    if isinstance(relaxations, list):
        shape.relaxations = relaxations
        for i, item in enumerate(relaxations):
            where: Path = (*p, "relaxations", i)
            if not isinstance(item, dict):
                shape.reject("shape", "expected an object", where)
                continue
            for key in ("obligation", "durability", "reason"):
                _need(shape, item, key, where, str)
            durability = item.get("durability")
            if isinstance(durability, str) and durability not in DURABILITY:
                shape.reject("shape", "durability is session, deployment or persisted", where)


def _read_claim(shape: Shape, claim: Any, path: Path) -> None:
    if not isinstance(claim, dict):
        shape.reject("shape", "expected an object", path)
        return
    pid = _need(shape, claim, "id", path, str)
    tier = _need(shape, claim, "evidenceTier", path, str)
    count = _need(shape, claim, "witnessCount", path, int)
    certified = _need(shape, claim, "certified", path, bool)
    if isinstance(tier, str) and tier not in TIERS:
        shape.reject("shape", "evidenceTier is self, steward or independent", path)
    if _is_int(count) and count < 0:
        shape.reject("shape", "witnessCount is not negative", path)
    if isinstance(pid, str) and isinstance(tier, str) and isinstance(certified, bool):
        shape.profiles.append(ProfileClaim(pid, tier, certified))


def _read_row(shape: Shape, row: Any, path: Path) -> bool:
    if not isinstance(row, dict):
        shape.reject("shape", "expected an object", path)
        return False
    before = len(shape.rejections)
    row_id = _need(shape, row, "id", path, str)
    _need(shape, row, "scenario", path, str)
    result = _need(shape, row, "result", path, str)
    assertions = _get(shape, row, "assertions", path, int)
    _get(shape, row, "detail", path, str)
    _get(shape, row, "evidence", path, dict)
    if isinstance(result, str) and result not in RESULTS:
        shape.reject("shape", "not a disposition", (*path, "result"))
    if _is_int(assertions) and assertions < 0:
        shape.reject("shape", "assertions is not negative", (*path, "assertions"))
    if isinstance(row_id, str):
        slug = row_id.split(".")
        if not ROW_ID.match(row_id):
            shape.reject("row-id", "not openwop.<area>.<slug>", (*path, "id"))
        elif slug[1] == "it" and len(slug) > 3 and slug[2] in COHERENCE_FILES:
            shape.reject("row-id", "a corpus-coherence id in a host bundle", (*path, "id"))
    return len(shape.rejections) == before


def _read_results(shape: Shape, b: dict[str, Any]) -> None:
    results = _need(shape, b, "results", (), dict)
    if isinstance(results, dict):
        p: Path = ("results",)
        totals = _need(shape, results, "totals", p, dict)
        if isinstance(totals, dict):
            good = {k: v for k in TOTAL_KEYS.values() if _is_int(v := totals.get(k)) and v >= 0}
            for key in sorted(set(TOTAL_KEYS.values()) - set(good)):
                shape.reject("shape", "a non-negative integer is required", (*p, "totals", key))
            if len(good) == len(TOTAL_KEYS):
                shape.totals = good
        rows = _need(shape, results, "requirements", p, list)
        if isinstance(rows, list):
            shape.raw_rows = rows
            if not rows:
                shape.reject("shape", "at least one row is required", (*p, "requirements"))
            oks = [_read_row(shape, r, (*p, "requirements", i)) for i, r in enumerate(rows)]
            if all(oks):
                shape.rows = rows
            else:
                shape.notes.append("row checks and the witness digest need well-formed rows")
    witness = _need(shape, b, "witnessSha256", (), str)
    if isinstance(witness, str) and not HEX64.fullmatch(witness):
        shape.reject("shape", "not 64 lowercase hex digits", ("witnessSha256",))
    shape.witness_sha256 = witness
    count = _need(shape, b, "assertionCount", (), int)
    if _is_int(count) and count < 1:
        shape.reject("shape", "assertionCount is at least 1", ("assertionCount",))
    shape.assertion_count = count
    detail = _get(shape, b, "detail", (), dict)
    shape.has_detail = isinstance(detail, dict)
    if isinstance(detail, dict):
        entries = _need(shape, detail, "nonPass", ("detail",), list)
        for i, entry in enumerate(entries if isinstance(entries, list) else []):
            where: Path = ("detail", "nonPass", i)
            if not isinstance(entry, dict):
                shape.reject("shape", "expected an object", where)
                continue
            for key in ("id", "result", "reason"):
                _need(shape, entry, key, where, str)
    durability = _get(shape, b, "durability", (), dict)
    if isinstance(durability, dict):
        shape.rung = durability.get("rung", ABSENT)


def _read_signatures(shape: Shape, b: dict[str, Any]) -> None:
    sig = b.get("signature")
    if not isinstance(sig, dict):
        what = "missing" if sig is None else "not an object"
        shape.reject("signature-missing", f"signature is {what}", ("signature",))
    else:
        shape.signature = Signature(
            sig.get("alg"), sig.get("keyId"), sig.get("sig"), sig.get("over")
        )
    if "verifierSignature" in b:
        vs = b["verifierSignature"]
        if not isinstance(vs, dict):
            shape.reject("shape", "expected an object", ("verifierSignature",))
        else:
            shape.verifier_signature = vs
            for key in ("alg", "keyId", "sig"):
                _get(shape, vs, key, ("verifierSignature",), str)
            if isinstance(vs.get("sig"), str) and not SIGNATURE_PATTERN.fullmatch(vs["sig"]):
                shape.reject("shape", "not 86 base64url characters", ("verifierSignature", "sig"))
