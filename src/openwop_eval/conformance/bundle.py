"""An independent verifier for OpenWOP certification bundle v3 files from any host (pure).

:func:`check_bundle` applies every check of the certification digest (§7) to a parsed bundle
and returns a :class:`Verification`: the named rejections, the profiles that still certify,
which key the signature was checked against and where it came from, what could not be
decided, and the rows the bundle claims about RFC 0246. It never raises on hostile input:
a malformed bundle is a located ``shape`` rejection. Exit codes follow the digest: 0
verified, 1 rejected, 2 coherent but not independently verified; 3 (not readable, not
JSON) is the shell's to decide (:mod:`.verifier`).

A rejection naming a profile removes only that profile; any other empties the certified set
(§7.12). ``independent-unverifiable`` refuses the independent claim but, like the suite's
``--verify``, reads as "not independently verified" (exit 2) rather than as tampering.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from . import bundle_rules, digests
from .bundle_checks import KeySource, PublishedKey, SignatureOutcome, check_signatures
from .bundle_derive import discovery_checks, relaxation_checks, rung_checks
from .bundle_rules import ProfileRule
from .bundle_shape import RESULTS, TOTAL_KEYS, Rejection, Shape, read
from .ijson import snippet

__all__ = ["Claim", "PublishedKey", "Rejection", "Verification", "check_bundle"]

RFC0246_PREFIX = "openwop.requirement.0246."
PROFILE_SCOPED = frozenset(
    {"relaxed-profile-certified", "undeclared-relaxation-observed", "profile-not-derivable"}
)
Verdict = Literal["verified", "rejected", "unverified"]
_USE_PACKAGED: Any = object()


@dataclass(frozen=True)
class Claim:
    """A row the bundle carries about RFC 0246 (``openwop.requirement.0246.*``)."""

    id: str
    result: str
    assertions: int | None
    detail: str | None


@dataclass(frozen=True)
class Verification:
    """The outcome of :func:`check_bundle`."""

    rejections: tuple[Rejection, ...]
    certified_profiles: tuple[str, ...]
    claimed_certified: tuple[str, ...]
    signature_checked: bool
    signature_verified: bool
    key_source: KeySource | None
    key_id: str | None
    key_retired_at: str | None
    independent_claimed: bool
    verifier_signature_verified: bool
    derivability_checked: bool
    opted_out: tuple[str, ...]
    undetermined: tuple[str, ...]
    notes: tuple[str, ...]
    rfc0246: tuple[Claim, ...]
    host: Mapping[str, Any] = field(default_factory=dict)
    discovery_error: str | None = None
    """Why a requested live discovery document was not read (set by the I/O shell)."""

    @property
    def exit_code(self) -> int:
        names = {r.name for r in self.rejections}
        if names - {"independent-unverifiable"}:
            return 1
        return 2 if self.gaps else 0

    @property
    def verdict(self) -> Verdict:
        return ("verified", "rejected", "unverified")[self.exit_code]

    @property
    def gaps(self) -> tuple[str, ...]:
        """Why a coherent bundle is not independently verified (empty when it is)."""
        gaps = []
        if self.discovery_error is not None:
            gaps.append(f"the live discovery document was not read: {self.discovery_error}")
        if not self.signature_checked:
            gaps.append("the signature was not checked against any host key")
        if not self.derivability_checked:
            gaps.append("the certified profiles were not re-derived from discovery.document")
        if any(r.name == "independent-unverifiable" for r in self.rejections):
            gaps.append("the independent claim was not verified")
        return tuple(gaps)

    @classmethod
    def refusal(cls, rejection: Rejection) -> Verification:
        """The verification of a text refused before it could be read as a bundle."""
        none: tuple[str, ...] = ()
        return cls(
            rejections=(rejection,),
            certified_profiles=none,
            claimed_certified=none,
            signature_checked=False,
            signature_verified=False,
            key_source=None,
            key_id=None,
            key_retired_at=None,
            independent_claimed=False,
            verifier_signature_verified=False,
            derivability_checked=False,
            opted_out=none,
            undetermined=none,
            notes=none,
            rfc0246=(),
        )

    def as_dict(self) -> dict[str, Any]:
        """The result as JSON-ready data, camelCase like the project's other results."""
        data: dict[str, Any] = _camel(asdict(self))
        data.update(verdict=self.verdict, exitCode=self.exit_code, gaps=list(self.gaps))
        return data


def _camel(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k.split("_")[0] + "".join(p.title() for p in k.split("_")[1:]): _camel(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_camel(v) for v in value]
    return value


def check_bundle(
    bundle: Any,
    *,
    host_key: Ed25519PublicKey | None = None,
    live_keys: Sequence[PublishedKey] | None = None,
    verifier_key: Ed25519PublicKey | None = None,
    registry: Sequence[ProfileRule] | None = _USE_PACKAGED,
) -> Verification:
    """Verify a parsed bundle (any JSON value), checking every item of the digest's §7.

    ``live_keys`` is the live discovery document's ``signingKeys[]``, or ``None`` when it was
    not read; ``host_key`` an operator-supplied PEM key; ``verifier_key`` the key an
    ``independent`` claim is countersigned with. ``registry`` defaults to the packaged
    ``spec/v2/profiles.json``; ``None`` models an install without it.
    """
    rules = bundle_rules.packaged_registry() if registry is _USE_PACKAGED else registry
    shape = read(bundle)
    undetermined: list[str] = []
    rejections = list(shape.rejections)
    if shape.rows is not None:
        rejections += _row_checks(shape)
    signed = check_signatures(
        shape, host_key=host_key, live_keys=live_keys, verifier_key=verifier_key
    )
    rejections += signed.rejections
    certified = [p.id for p in shape.profiles if p.certified]
    relaxed = relaxation_checks(shape, certified, rules or ())
    rejections += relaxed + rung_checks(shape, undetermined)
    blocked = sum(1 for r in shape.rows or () if r.get("result") == "blocked")
    denied = {r.profile for r in relaxed if r.name == "relaxed-profile-certified"}
    if blocked and set(certified) - denied:
        rejections.append(
            Rejection("blocked-certified", f"{blocked} blocked row(s) and a certified profile")
        )
    derived, opted = discovery_checks(shape, certified, rules, rejections, undetermined)
    scoped = {r.profile for r in rejections if r.name in PROFILE_SCOPED}
    bundle_wide = any(r.name not in PROFILE_SCOPED for r in rejections)
    return Verification(
        rejections=tuple(rejections),
        certified_profiles=() if bundle_wide else tuple(p for p in certified if p not in scoped),
        claimed_certified=tuple(certified),
        signature_checked=signed.checked,
        signature_verified=signed.verified,
        key_source=signed.source,
        key_id=signed.key_id,
        key_retired_at=signed.retired_at,
        independent_claimed=signed.independent,
        verifier_signature_verified=signed.verifier_verified,
        derivability_checked=derived,
        opted_out=tuple(opted),
        undetermined=tuple(undetermined),
        notes=tuple(shape.notes + signed.notes),
        rfc0246=_rfc0246(shape.raw_rows),
        host=_host(shape, signed),
    )


def _row_checks(shape: Shape) -> list[Rejection]:
    rows = shape.rows or []
    out: list[Rejection] = []
    ids = Counter(r["id"] for r in rows)
    for row_id in sorted(i for i, n in ids.items() if n > 1)[:20]:
        out.append(Rejection("duplicate-requirement", f"{snippet(row_id, 80)}: more than one row"))
    for row in rows:
        where = snippet(row["id"], 80)
        if row["result"] != "executed-pass" and not str(row.get("detail") or "").strip():
            out.append(Rejection("reason-missing", f"{where}: {row['result']} without a reason"))
        if row["result"] == "executed-pass" and not row.get("assertions"):
            out.append(Rejection("vacuous-pass", f"{where}: executed-pass with no assertions"))
    counted = Counter(r["result"] for r in rows)
    if shape.totals is not None:
        for result in RESULTS:
            key = TOTAL_KEYS[result]
            if shape.totals.get(key) != counted[result]:
                out.append(
                    Rejection(
                        "totals-mismatch",
                        f"totals.{key} is {shape.totals.get(key)} but the rows count "
                        f"{counted[result]}",
                    )
                )
    total = sum(int(r.get("assertions") or 0) for r in rows)
    if isinstance(shape.assertion_count, int) and shape.assertion_count != total:
        out.append(
            Rejection(
                "assertion-count",
                f"assertionCount is {shape.assertion_count} but the rows sum to {total}",
            )
        )
    if any(r["result"] != "executed-pass" for r in rows) and not shape.has_detail:
        out.append(Rejection("detail-missing", "non-pass rows and no detail block"))
    if shape.witness_sha256 is not None:
        try:
            digest = digests.witness_digest(rows, shape.relaxations)
        except (ValueError, TypeError, UnicodeError) as exc:
            out.append(Rejection("non-ijson", f"the rows are not I-JSON: {snippet(str(exc))}"))
        else:
            if digest != shape.witness_sha256:
                out.append(
                    Rejection(
                        "witness-digest",
                        f"witnessSha256 {shape.witness_sha256[:12]}… is not the digest of the "
                        f"rows and declared relaxations ({digest[:12]}…)",
                    )
                )
    return out


def _rfc0246(rows: list[Any]) -> tuple[Claim, ...]:
    claims = []
    for row in rows:
        row_id = row.get("id") if isinstance(row, dict) else None
        if isinstance(row_id, str) and row_id.startswith(RFC0246_PREFIX):
            assertions = row.get("assertions")
            detail = row.get("detail")
            claims.append(
                Claim(
                    row_id,
                    str(row.get("result")),
                    assertions if isinstance(assertions, int) else None,
                    detail if isinstance(detail, str) else None,
                )
            )
    return tuple(claims)


def _host(shape: Shape, signed: SignatureOutcome) -> dict[str, Any]:
    build = shape.build or {}
    return {
        "name": shape.host_name,
        "version": shape.host_version,
        "vendor": shape.host_vendor,
        "buildKind": build.get("kind"),
        "buildId": build.get("id"),
        "suiteName": shape.suite_name,
        "suiteVersion": shape.suite_version,
        "targetMajor": shape.target_major,
        "discoveryUrl": shape.discovery_url,
        "signatureKeyId": signed.key_id,
    }
