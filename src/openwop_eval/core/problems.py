"""Problems found in user input, each located by a JSON path (and, when known, a line)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias

Loc: TypeAlias = tuple[str | int, ...]
"""A location inside a JSON document: object keys and array indexes from the root."""

Severity: TypeAlias = Literal["error", "warning"]

_PLAIN_KEY = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$-]*$")


def format_loc(loc: Loc) -> str:
    """Render a location as a JSON path: ``$.tasks[3].expected["odd key"]``."""
    out = ["$"]
    for part in loc:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _PLAIN_KEY.match(part):
            out.append(f".{part}")
        else:
            escaped = part.replace("\\", "\\\\").replace('"', '\\"')
            out.append(f'["{escaped}"]')
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong (or doubtful, for a warning) with a document, where it is."""

    loc: Loc
    message: str
    severity: Severity = "error"
    line: int | None = None
    """1-based line in the source file, when the loader could tell."""

    @property
    def path(self) -> str:
        return format_loc(self.loc)

    def at_line(self, line: int | None) -> Problem:
        return replace(self, line=line)

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        return f"{where}{self.path}: {self.message}"


def errors_in(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "error"]
