"""Safety findings (adversarial mode): what a finding is, and how severities rank.

A finding is a kind and a severity — never the offending text. Kinds are short slugs, so a
detector or a judge cannot smuggle content into the events or the summary through one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from . import names as n

Severity: TypeAlias = Literal["low", "medium", "high", "critical"]
SEVERITY_RANK: Final = {level: rank for rank, level in enumerate(n.SEVERITIES)}
KIND_PATTERN: Final = r"^[a-z0-9][a-z0-9.-]{0,63}$"
"""A finding kind: a lower-case slug of at most 64 characters."""
_KIND = re.compile(KIND_PATTERN)


@dataclass(frozen=True, slots=True, order=True)
class FindingTag:
    """The content-free face of a finding: what the events and the summary carry."""

    kind: str
    severity: Severity

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "severity": self.severity}


def finding_problem(kind: object, severity: object) -> str | None:
    """Why ``(kind, severity)`` is not a finding tag, or None when it is one."""
    if not isinstance(kind, str) or _KIND.fullmatch(kind) is None:
        return "a finding kind must be a lower-case slug of 1 to 64 of [a-z0-9.-]"
    if severity not in SEVERITY_RANK:
        return f"a finding severity must be one of {', '.join(n.SEVERITIES)}"
    return None


def at_or_above(severity: str, level: str | None) -> bool:
    """Whether a finding of ``severity`` reaches ``level`` (never, when no level is set)."""
    return level is not None and SEVERITY_RANK[severity] >= SEVERITY_RANK[level]
