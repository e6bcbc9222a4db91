"""The suite's derivation rules a bundle verifier re-applies to signed rows (pure).

Each rule is a reading of the OpenWOP conformance suite, never a copy of it:

- **Profiles** (``spec/v2/profiles.json``, RFC 0169 §C.1): at major 2 a profile derives from
  a discovery document when every family its predicate lists is present as an object and
  every metadata key it lists is present. The registry ships as package data
  (``data/profiles.json``, kept byte-for-byte); it is the one file this module reads.
- **Relaxations** (RFC 0173 §A.2): an obligation ``<family>.<name>`` denies every profile
  whose predicate lists that family, or whose id names it. An observed relaxation is the
  row ``openwop.requirement.0171.webhook-egress-refused`` recorded ``executed-fail``: the
  host accepted a destination its egress guard must refuse (``webhooks.egress-guard``).
- **Opt-outs** (RFC 0195 §3): read from signed ``skipped`` rows, in both recorded forms —
  a row ``openwop.profile.<name>`` (suite 2.35.0) and a detail naming the profile after
  ``OPENWOP_OPTED_OUT_PROFILES:`` (later suites).
- **Durability rung** (RFC 0158 §D, §E): only ``durable-single-instance`` derives — the five
  0158 rows ``executed-pass`` and each kill row resuming inside a declared class's bound;
  a higher rung needs evidence no stored suite version records, so it is refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Final

RUNGS: Final = ("durable-single-instance", "durable-multi-instance", "multi-region-qualified")
_R158: Final = "openwop.requirement.0158."
SINGLE_INSTANCE_ROWS: Final = tuple(
    _R158 + r
    for r in (
        "kill-after-accept",
        "kill-during-execution",
        "duplicate-delivery",
        "poison-exhaustion",
        "bound-is-derived",
    )
)
_KILL_ROWS: Final = (_R158 + "kill-after-accept", _R158 + "kill-during-execution")
_BOUND_ROW: Final = _R158 + "bound-is-derived"
_NAME: Final = re.compile(r"[a-z][A-Za-z0-9._-]{0,63}")
OBSERVED_RELAXATIONS: Final = (
    ("openwop.requirement.0171.webhook-egress-refused", "webhooks.egress-guard"),
)
"""Rows whose ``executed-fail`` shows the host running with an obligation relaxed."""
_OPT_OUT_ROW: Final = "openwop.profile."
_OPT_OUT_VAR: Final = "OPENWOP_OPTED_OUT_PROFILES"
_OPT_OUT_NAMED: Final = re.compile(
    _OPT_OUT_VAR + r":\s*([A-Za-z0-9._-]+(?:\s*,\s*[A-Za-z0-9._-]+)*)"
)


@dataclass(frozen=True)
class ProfileRule:
    """One registry entry: the families and metadata keys a profile's predicate lists."""

    id: str
    families: tuple[str, ...]
    metadata: tuple[str, ...]


def registry_from(document: Any) -> tuple[ProfileRule, ...] | None:
    """The rules of a ``profiles.json`` value; ``None`` when it has no usable list."""
    entries = document.get("profiles") if isinstance(document, Mapping) else None
    if not isinstance(entries, list):
        return None
    rules = []
    for entry in entries:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("id"), str):
            continue
        predicate = entry.get("predicate")
        predicate = predicate if isinstance(predicate, Mapping) else {}
        rules.append(
            ProfileRule(
                entry["id"],
                tuple(map(str, _list(predicate.get("families")))),
                tuple(map(str, _list(predicate.get("metadata")))),
            )
        )
    return tuple(rules)


@cache
def packaged_registry() -> tuple[ProfileRule, ...] | None:
    """The registry shipped with this package, or ``None`` if it cannot be read."""
    try:
        text = (resources.files(__package__) / "data" / "profiles.json").read_text("utf-8")
        return registry_from(json.loads(text))
    except (OSError, ValueError):
        return None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _record(root: Mapping[str, Any], key: str) -> bool:
    return isinstance(root.get(key), dict)


def derivable(document: Mapping[str, Any], profile: str, registry: Sequence[ProfileRule]) -> bool:
    """Whether ``document`` derives ``profile`` at major 2 (unknown profile ids never do)."""
    for rule in registry:
        if rule.id == profile:
            return all(_record(document, f) for f in rule.families) and all(
                k in document for k in rule.metadata
            )
    return False


def relaxed_by(
    obligations: Iterable[str], profiles: Iterable[str], registry: Sequence[ProfileRule]
) -> set[str]:
    """The profiles a relaxed obligation denies: those owning (or naming) its family."""
    families = {o.split(".")[0] for o in obligations} - {""}
    owned = {rule.id: rule.families for rule in registry}
    return {
        p
        for p in profiles
        if any(f in owned.get(p, ()) or f in p for f in families)  # id-substring arm: aliases
    }


def observed_relaxations(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Obligations the rows show relaxed without any declaration."""
    failed = {r.get("id") for r in rows if r.get("result") == "executed-fail"}
    return [obligation for row, obligation in OBSERVED_RELAXATIONS if row in failed]


def opted_out(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The profiles and families the signed ``skipped`` rows record as opted out."""
    names: set[str] = set()
    for row in rows:
        detail = row.get("detail")
        if row.get("result") != "skipped" or not isinstance(detail, str):
            continue
        row_id = row.get("id")
        if isinstance(row_id, str) and row_id.startswith(_OPT_OUT_ROW) and _OPT_OUT_VAR in detail:
            names.add(row_id[len(_OPT_OUT_ROW) :])
        for match in _OPT_OUT_NAMED.finditer(detail):
            names.update(n.strip() for n in match.group(1).split(","))
    return sorted(names)


def opt_out_advertised(
    document: Mapping[str, Any], name: str, registry: Sequence[ProfileRule]
) -> bool | None:
    """Whether the document advertises an opted-out name; ``None`` when undecidable.

    ``family.<key>`` is advertised when ``<key>`` is an object; a registry profile when it
    derives. Another dotted name reads as a facet ``<family>.<member>``: absent, it is not
    advertised; present, no stored rule says whether opting out of it contradicts.
    """
    if name.startswith("family."):
        return _record(document, name.removeprefix("family."))
    if any(rule.id == name for rule in registry):
        return derivable(document, name, registry)
    family, _, member = name.partition(".")
    holder = document.get(family)
    if member and (not isinstance(holder, dict) or holder.get(member) in (None, False)):
        return False
    return None


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _bounds(raw: Any) -> dict[str, int] | str:
    """Declared recovery bounds per class, or why they are unusable."""
    if not isinstance(raw, list) or not raw:
        return "no recovery classes are declared"
    if len(raw) > 16:
        return "more than 16 recovery classes"
    bounds: dict[str, int] = {}
    for entry in raw:
        cls = entry.get("class") if isinstance(entry, Mapping) else None
        if not isinstance(cls, str) or not _NAME.fullmatch(cls) or cls in bounds:
            return "a recovery class is unnamed, malformed or declared twice"
        terms = entry.get("terms")
        if not isinstance(terms, list) or not 1 <= len(terms) <= 16:
            return f"class {cls}: terms[] must carry 1..16 entries"
        if not all(
            isinstance(t, Mapping)
            and isinstance(t.get("name"), str)
            and _NAME.fullmatch(t["name"])
            and _count(t.get("ms"))
            for t in terms
        ):
            return f"class {cls}: every term is {{name, ms}} with ms a non-negative integer"
        bound = entry.get("bound")
        if not _count(bound) or sum(t["ms"] for t in terms) != bound:
            return f"class {cls}: the terms do not sum to the declared bound"
        bounds[cls] = bound
    return bounds


def derive_rung(rows: Iterable[Mapping[str, Any]]) -> tuple[str | None, str]:
    """The highest rung the rows support, and why (RFC 0158 §E)."""
    by_id = {r.get("id"): r for r in rows}
    for row_id in SINGLE_INSTANCE_ROWS:
        row = by_id.get(row_id)
        if row is None:
            return None, f"{row_id} is absent"
        if row.get("result") != "executed-pass":
            return None, f"{row_id} is not executed-pass"
    evidence = by_id[_BOUND_ROW].get("evidence")
    bounds = _bounds(evidence.get("recoveryBounds") if isinstance(evidence, Mapping) else None)
    if isinstance(bounds, str):
        return None, f"{_BOUND_ROW}: {bounds}"
    for row_id in _KILL_ROWS:
        evidence = by_id[row_id].get("evidence")
        seen = evidence.get("recovery") if isinstance(evidence, Mapping) else None
        if not isinstance(seen, Mapping):
            return None, f"{row_id} records no evidence.recovery"
        cls, bound_ms, observed = seen.get("class"), seen.get("boundMs"), seen.get("observedMs")
        if not isinstance(cls, str) or not _count(bound_ms) or not _count(observed):
            return None, f"{row_id}: evidence.recovery is malformed"
        if cls not in bounds or bounds[cls] != bound_ms or observed > bound_ms:
            return None, f"{row_id} did not resume inside a declared class's bound"
    return "durable-single-instance", "the five 0158 rows pass inside their declared bounds"


def rung_problem(claimed: Any, rows: Sequence[Mapping[str, Any]]) -> str | None:
    """Why a claimed rung does not re-derive from the signed rows, or ``None`` if it does."""
    if claimed not in RUNGS:
        return "durability.rung is not one of " + ", ".join(RUNGS)
    derived, why = derive_rung(rows)
    if derived is None:
        return f"durability.rung claims {claimed}, but the signed rows support no rung: {why}"
    if claimed != derived:
        return f"durability.rung claims {claimed}, but the signed rows support only {derived}"
    return None
