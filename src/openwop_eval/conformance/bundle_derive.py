"""The checks that re-derive what a bundle claims from its signed rows and document (pure).

Digest §7.8 (relaxations, declared or observed), §7.9 (the durability rung) and §7.11 (the
captured document's digest, profile derivability, opt-outs). The rules themselves are in
:mod:`.bundle_rules`; a check whose rule no stored suite version settles is recorded as
undetermined rather than passed.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import bundle_rules, digests
from .bundle_rules import ProfileRule
from .bundle_shape import ABSENT, Rejection, Shape
from .ijson import snippet


def relaxation_checks(
    shape: Shape, certified: list[str], rules: Sequence[ProfileRule]
) -> list[Rejection]:
    obligations = [
        r["obligation"]
        for r in shape.relaxations
        if isinstance(r, dict) and isinstance(r.get("obligation"), str)
    ]
    declared = bundle_rules.relaxed_by(obligations, certified, rules)
    observed_obligations = bundle_rules.observed_relaxations(shape.rows or ())
    observed = bundle_rules.relaxed_by(observed_obligations, certified, rules)
    out = [
        Rejection(
            "relaxed-profile-certified",
            f"{snippet(p)} is certified while a relaxation it owns is recorded",
            p,
        )
        for p in certified
        if p in declared
    ]
    out += [
        Rejection(
            "undeclared-relaxation-observed",
            f"{snippet(p)} is certified, but the rows show "
            + ", ".join(observed_obligations)
            + " relaxed with no host.relaxations[] entry",
            p,
        )
        for p in certified
        if p in observed and p not in declared
    ]
    return out


def rung_checks(shape: Shape, undetermined: list[str]) -> list[Rejection]:
    if shape.rung is ABSENT:
        return []
    if shape.rows is None:
        undetermined.append("durability.rung: the rows are malformed, so it was not re-derived")
        return []
    if shape.rung in bundle_rules.RUNGS[1:]:
        undetermined.append(
            "durability.rung: only durable-single-instance derives from the stored suite; a "
            "newer suite may witness higher rungs"
        )
    problem = bundle_rules.rung_problem(shape.rung, shape.rows)
    return [Rejection("rung-not-derivable", problem)] if problem else []


def discovery_checks(
    shape: Shape,
    certified: list[str],
    rules: Sequence[ProfileRule] | None,
    rejections: list[Rejection],
    undetermined: list[str],
) -> tuple[bool, list[str]]:
    """§7.11: the captured document's digest, each certified profile, each opt-out."""
    opted = bundle_rules.opted_out(shape.rows or ())
    document = shape.document
    if document is ABSENT or shape.discovery_sha256 is None:
        return False, opted
    try:
        digest = digests.discovery_digest(document)
    except (ValueError, TypeError, UnicodeError) as exc:
        rejections.append(Rejection("non-ijson", f"discovery.document: {snippet(str(exc))}"))
        return False, opted
    if digest != shape.discovery_sha256:
        rejections.append(
            Rejection(
                "discovery-digest",
                f"discovery.document hashes to {digest[:12]}… but discovery.sha256 is "
                f"{shape.discovery_sha256[:12]}…: not the document the signature attests to",
            )
        )
        return False, opted
    if shape.target_major != 2:
        undetermined.append(
            "profile derivation at major 1 (the v1 catalog) is not implemented; certified "
            "profiles and opt-outs were not re-derived"
        )
        return False, opted
    if rules is None:
        undetermined.append("spec/v2/profiles.json is unavailable; profiles were not re-derived")
        return False, opted
    for name in opted:
        advertised = bundle_rules.opt_out_advertised(document, name, rules)
        if advertised:
            rejections.append(
                Rejection(
                    "opted-out-but-advertised",
                    f"{snippet(name)} is recorded as an opt-out, but the captured document "
                    "advertises it",
                )
            )
        elif advertised is None:
            undetermined.append(
                f"opt-out {snippet(name)}: no stored rule decides whether the document "
                "advertises it"
            )
    for profile in certified:
        if not bundle_rules.derivable(document, profile, rules):
            rejections.append(
                Rejection(
                    "profile-not-derivable",
                    f"{snippet(profile)} is certified, but the captured document does not "
                    "derive it at major 2",
                    profile,
                )
            )
    return True, opted
