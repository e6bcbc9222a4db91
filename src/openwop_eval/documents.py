"""Decoding JSON and YAML documents with the line of every value and strict JSON semantics.

YAML is read with the YAML 1.2 core rules, so ``on``/``yes`` stay strings, ``012`` is twelve
and ``2024-01-01`` is not a date: a YAML suite means what the same JSON would. Duplicate
keys, non-string keys and non-finite numbers are problems, not silent surprises.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import json_source_map
import yaml

from .core.problems import Loc, Problem


@dataclass
class LineMap:
    """1-based lines of the values in a document, by location."""

    lines: dict[Loc, int] = field(default_factory=dict)

    def line_of(self, loc: Loc) -> int | None:
        """The line of ``loc``, or of its nearest ancestor the map knows."""
        for end in range(len(loc), -1, -1):
            line = self.lines.get(loc[:end])
            if line is not None:
                return line
        return None


def read_document(path: Path) -> tuple[Any, LineMap, list[Problem]]:
    """Read and decode a JSON or YAML file; a file that cannot be read is a problem too."""
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, LineMap(), [Problem((), f"cannot read the file: {exc}")]
    return parse_document(text, path.suffix.lower())


def parse_document(text: str, suffix: str) -> tuple[Any, LineMap, list[Problem]]:
    """Decode ``text``; JSON for ``.json``, YAML for ``.yaml``/``.yml``, else JSON then YAML."""
    if not text.strip():
        return None, LineMap(), [Problem((), "the file is empty")]
    if suffix in (".yaml", ".yml"):
        return _parse_yaml(text)
    if suffix == ".json" or text.lstrip().startswith(("{", "[")):
        return _parse_json(text)
    return _parse_yaml(text)


# --- JSON -------------------------------------------------------------------------------


class _Object(dict[str, Any]):
    """A decoded JSON object that had duplicate keys (the last value wins, as in json)."""

    duplicates: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    duplicates = []
    for key, value in pairs:
        if key in seen:
            duplicates.append(key)
        seen[key] = value
    if not duplicates:
        return seen
    marked = _Object(seen)
    marked.duplicates = duplicates
    return marked


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _parse_json(text: str) -> tuple[Any, LineMap, list[Problem]]:
    try:
        doc = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        return None, LineMap(), [Problem((), f"not valid JSON: {exc.msg}", line=exc.lineno)]
    except ValueError as exc:
        return None, LineMap(), [Problem((), f"not valid JSON: {exc}")]
    lines = LineMap()
    try:
        entries = json_source_map.calculate(text)
    except Exception:  # the map only adds line numbers; the document itself is valid
        entries = {}
    by_pointer = {pointer: entry.value_start.line + 1 for pointer, entry in entries.items()}
    problems: list[Problem] = []
    _walk_json(doc, (), by_pointer, lines, problems)
    return doc, lines, problems


def _pointer(loc: Loc) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in loc)


def _walk_json(
    value: Any, loc: Loc, by_pointer: dict[str, int], lines: LineMap, problems: list[Problem]
) -> None:
    line = by_pointer.get(_pointer(loc))
    if line is not None:
        lines.lines[loc] = line
    if isinstance(value, dict):
        for key in getattr(value, "duplicates", ()):
            problems.append(Problem((*loc, key), f"duplicate key {key!r}", line=line))
        for key, item in value.items():
            _walk_json(item, (*loc, key), by_pointer, lines, problems)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _walk_json(item, (*loc, i), by_pointer, lines, problems)


# --- YAML -------------------------------------------------------------------------------


class _CoreLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core-schema scalars instead of YAML 1.1's."""


_CoreLoader.yaml_implicit_resolvers = {}
_SCALARS = [
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:int", r"^[-+]?[0-9]+$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$",
        "-+.0123456789",
    ),
]
for _tag, _pattern, _first in _SCALARS:
    _CoreLoader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))


def _int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    return int(loader.construct_scalar(node))


def _float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    return float(loader.construct_scalar(node))


_CoreLoader.add_constructor("tag:yaml.org,2002:int", _int)
_CoreLoader.add_constructor("tag:yaml.org,2002:float", _float)


def _parse_yaml(text: str) -> tuple[Any, LineMap, list[Problem]]:
    loader = _CoreLoader(text)
    try:
        node = loader.get_single_node()
        doc = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        return None, LineMap(), [Problem((), f"not valid YAML: {exc.problem}", line=line)]
    except (yaml.YAMLError, ValueError) as exc:
        return None, LineMap(), [Problem((), f"not valid YAML: {exc}")]
    finally:
        loader.dispose()
    lines = LineMap()
    problems: list[Problem] = []
    if node is not None:
        _walk_yaml(node, (), lines, problems)
    _check_finite(doc, (), lines, problems)
    return doc, lines, problems


def _walk_yaml(node: yaml.Node, loc: Loc, lines: LineMap, problems: list[Problem]) -> None:
    lines.lines[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            line = key_node.start_mark.line + 1
            if key_node.tag != "tag:yaml.org,2002:str" or not isinstance(key, str):
                problems.append(Problem(loc, f"keys must be strings; got {key!r}", line=line))
                continue
            if key in seen:
                problems.append(Problem((*loc, key), f"duplicate key {key!r}", line=line))
            seen.add(key)
            _walk_yaml(value_node, (*loc, key), lines, problems)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk_yaml(item, (*loc, i), lines, problems)


def _check_finite(value: Any, loc: Loc, lines: LineMap, problems: list[Problem]) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        problems.append(Problem(loc, f"{value} is not a JSON number", line=lines.line_of(loc)))
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_finite(item, (*loc, key), lines, problems)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_finite(item, (*loc, i), lines, problems)
