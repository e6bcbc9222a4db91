"""docs/architecture.md's layer table, generated from the rules.

``python -m tests.architecture.table --write`` rewrites the table in the doc; the architecture
test fails while the two differ.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .rules import FRONT_DOOR_NAMES, LAYERS, PURE_EXCEPTIONS, RULES, SHELL_EDGES

DOC = Path(__file__).parents[2] / "docs" / "architecture.md"
BEGIN = "<!-- layer table: generated from tests/architecture/rules.py -->"
END = "<!-- end of the layer table -->"


def _names(keys: object) -> str:
    listed = sorted(keys)  # type: ignore[call-overload]
    return ", ".join(f"`{k}`" for k in listed) if listed else "nothing of the package"


def table() -> str:
    """The generated part of the doc, between its markers (exclusive)."""
    lines = ["The layers, bottom to top:", ""]
    lines += [f"{n}. {layer}: {about}" for n, (layer, about) in enumerate(LAYERS, 1)]
    lines += [
        "",
        "| layer | package or module | what it is | pure | may import |",
        "| --- | --- | --- | --- | --- |",
    ]
    for layer, _ in LAYERS:
        for key, rule in RULES.items():
            if rule.layer == layer:
                pure = "yes" if rule.pure else ""
                row = f"| {layer} | `{key}` | {rule.what} | {pure} | "
                lines.append(row + f"{_names(rule.may_import)} |")
    lines += ["", f"A module of the package takes from `__init__` only {_names(FRONT_DOOR_NAMES)}."]
    lines += ["", "A shell imports another shell only here:", ""]
    lines += [f"- `{a}` → `{b}`: {why}" for (a, b), why in SHELL_EDGES.items()]
    lines += ["", "A pure module uses an impure one only here, and only these names of it:", ""]
    lines += [
        f"- `{module}` → `{lib}`: {_names(names)}"
        for (module, lib), names in PURE_EXCEPTIONS.items()
    ]
    return "\n".join(lines)


def documented(text: str) -> str:
    """The generated part as ``text`` (the doc) has it."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[start:end].strip("\n")


def rewritten(text: str) -> str:
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return f"{text[:start]}\n{table()}\n{text[end:]}"


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        DOC.write_text(rewritten(DOC.read_text()))
    else:
        print(table())
