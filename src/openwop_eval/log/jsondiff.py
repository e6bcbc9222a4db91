"""Where two JSON values differ, path by path: how an audit names what disagrees."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core import json_equal

MISSING = "<absent>"


@dataclass(frozen=True)
class Mismatch:
    path: str
    given: Any
    recomputed: Any

    def __str__(self) -> str:
        return f"{self.path}: given {_show(self.given)}, recomputed {_show(self.recomputed)}"


def _show(value: Any) -> str:
    return value if value == MISSING else repr(value)


def diff(given: Any, recomputed: Any, path: str = "$") -> list[Mismatch]:
    """Every path where two JSON values differ (numbers by exact value, booleans strictly)."""
    if isinstance(given, dict) and isinstance(recomputed, dict):
        out = []
        for key in list(dict.fromkeys([*given, *recomputed])):
            out.extend(diff(given.get(key, MISSING), recomputed.get(key, MISSING), f"{path}.{key}"))
        return out
    if isinstance(given, list) and isinstance(recomputed, list):
        out = []
        for i in range(max(len(given), len(recomputed))):
            a = given[i] if i < len(given) else MISSING
            b = recomputed[i] if i < len(recomputed) else MISSING
            out.extend(diff(a, b, f"{path}[{i}]"))
        return out
    return [] if json_equal(given, recomputed) else [Mismatch(path, given, recomputed)]
