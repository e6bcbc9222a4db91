"""Static checks of a ``$schema`` matcher's JSON Schema: what must hold before it may grade.

A schema that passes these checks grades any value without an exception and in bounded work:

* every ``$ref`` resolves within the schema itself: nothing is ever retrieved (no network, no
  files), so a remote or relative ``$ref`` to another document is refused here;
* a ``$ref`` points at a subschema (under ``$defs``, ``properties``, ``allOf``…);
* no cycle of ``$ref`` and in-place applicators (``allOf``, ``not``, ``if``…) stays at the
  same place in the value — that would never end. A cycle through a keyword that descends
  into the value (``properties``, ``items``…) is fine: each round consumes one level of it;
* one place in the value applies at most :data:`MAX_IN_PLACE` subschemas, through at most
  :data:`MAX_IN_PLACE_DEPTH` nested in-place applicators;
* every ``pattern`` and ``patternProperties`` key is an RE2 pattern;
* ``$dynamicRef``/``$recursiveRef`` are refused (``$ref`` covers recursive schemas), and so is
  ``unevaluatedProperties`` beside ``patternProperties`` (jsonschema would run those patterns
  with Python's backtracking engine).

Locations are paths within the schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import referencing
import referencing.exceptions
import referencing.jsonschema

if TYPE_CHECKING:
    from referencing._core import Resolver  # not re-exported by the package

from .problems import Loc
from .regex import RegexError, compile_regex

MAX_IN_PLACE: Final = 10_000
MAX_IN_PLACE_DEPTH: Final = 50

IN_PLACE: Final = ("not", "if", "then", "else", "allOf", "anyOf", "oneOf", "dependentSchemas",
                   "dependencies")  # fmt: skip
DESCENDING: Final = ("properties", "patternProperties", "additionalProperties",
                     "unevaluatedProperties", "propertyNames", "items", "prefixItems",
                     "additionalItems", "unevaluatedItems", "contains")  # fmt: skip
DEFINITIONS: Final = ("$defs", "definitions")
_SCHEMA_MAPS: Final = ("properties", "patternProperties", "dependentSchemas", "dependencies")
DYNAMIC_REFS: Final = ("$dynamicRef", "$recursiveRef")

Finding = tuple[Loc, str]


def refuse_retrieval(uri: str) -> referencing.Resource[Any]:
    """The registry's ``retrieve``: grading never reads the network or a file."""
    raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]


def registry() -> referencing.Registry[Any]:
    return referencing.Registry(retrieve=refuse_retrieval)  # type: ignore[call-arg]


@dataclass(slots=True)
class _Node:
    contents: dict[str, Any]
    resolver: Resolver[Any]
    loc: Loc
    edges: list[tuple[int, Loc]] = field(default_factory=list)
    """In-place successors: (node key, location of the keyword that leads there)."""


def analyse(schema: Any, dialect: str) -> list[Finding]:
    """Every reason ``schema`` (already valid against its metaschema) may not grade."""
    spec = referencing.jsonschema.specification_with(dialect)
    nodes = _walk(schema, spec)
    findings = list(_node_findings(nodes))
    findings.extend(_resolve_refs(nodes))
    if not findings:
        findings.extend(_cycles(nodes))
    if not findings:
        findings.extend(_expansion(nodes))
    return findings


def _walk(schema: Any, spec: referencing.Specification[Any]) -> dict[int, _Node]:
    """Every subschema object, keyed by identity, with its base URI and in-place edges."""
    nodes: dict[int, _Node] = {}
    if not isinstance(schema, dict):
        return nodes
    root = registry().resolver_with_root(spec.create_resource(schema))
    todo: list[tuple[dict[str, Any], Resolver[Any], Loc]] = [(schema, root, ())]
    while todo:
        contents, resolver, loc = todo.pop()
        if id(contents) in nodes:
            continue  # one object reached twice (a YAML alias): walked once
        node = nodes[id(contents)] = _Node(contents, resolver, loc)
        children = list(_children(contents, loc))
        for child, child_loc, in_place in children:
            if in_place:
                node.edges.append((id(child), child_loc))
        for child, child_loc, _ in reversed(children):  # popped in document order
            todo.append((child, resolver.in_subresource(spec.create_resource(child)), child_loc))
    return nodes


def _children(contents: dict[str, Any], loc: Loc) -> Iterator[tuple[dict[str, Any], Loc, bool]]:
    """The object subschemas of one schema: (subschema, location, applies in place)."""
    for key, value in contents.items():
        here = (*loc, key)
        if key in IN_PLACE or key in DESCENDING:
            in_place = key in IN_PLACE
            if isinstance(value, dict) and key not in _SCHEMA_MAPS:
                yield value, here, in_place
            elif isinstance(value, dict):
                for name, sub in value.items():
                    if isinstance(sub, dict):
                        yield sub, (*here, name), in_place
            elif isinstance(value, list):
                for i, sub in enumerate(value):
                    if isinstance(sub, dict):
                        yield sub, (*here, i), in_place
        elif key in DEFINITIONS and isinstance(value, dict):
            for name, sub in value.items():
                if isinstance(sub, dict):
                    yield sub, (*here, name), False  # not applied; walked so every $ref is checked


def _node_findings(nodes: dict[int, _Node]) -> Iterator[Finding]:
    has_pattern_properties = any("patternProperties" in n.contents for n in nodes.values())
    for node in nodes.values():
        contents, loc = node.contents, node.loc
        for key in DYNAMIC_REFS:
            if key in contents:
                yield (*loc, key), f"{key} is not supported in $schema matchers; use $ref"
        if isinstance(contents.get("pattern"), str):
            yield from _regex_finding(contents["pattern"], (*loc, "pattern"))
        if isinstance(contents.get("patternProperties"), dict):
            for pattern in contents["patternProperties"]:
                yield from _regex_finding(pattern, (*loc, "patternProperties", pattern))
        if "unevaluatedProperties" in contents and has_pattern_properties:
            yield (
                (*loc, "unevaluatedProperties"),
                "unevaluatedProperties cannot be combined with patternProperties in a $schema"
                " matcher (their patterns would run on a backtracking engine); use"
                " additionalProperties",
            )
        if "$ref" in contents and not isinstance(contents["$ref"], str):
            yield (*loc, "$ref"), "$ref takes a string (a URI reference)"


def _regex_finding(pattern: str, loc: Loc) -> Iterator[Finding]:
    try:
        compile_regex(pattern)
    except RegexError as exc:
        yield loc, str(exc)


def _resolve_refs(nodes: dict[int, _Node]) -> Iterator[Finding]:
    for node in list(nodes.values()):
        ref = node.contents.get("$ref")
        if not isinstance(ref, str):
            continue
        where = (*node.loc, "$ref")
        try:
            target = node.resolver.lookup(ref).contents
        except (referencing.exceptions.Unresolvable, LookupError, TypeError, ValueError):
            yield (
                where,
                f"$ref {ref!r} does not resolve within this schema; a $schema matcher never"
                " fetches another document (no network, no files): put the referenced"
                ' schema under $defs and write {"$ref": "#/$defs/..."}',
            )
            continue
        if isinstance(target, bool):
            continue
        if not isinstance(target, dict) or id(target) not in nodes:
            yield where, f"$ref {ref!r} points at something that is not a subschema"
            continue
        node.edges.append((id(target), where))


def _cycles(nodes: dict[int, _Node]) -> Iterator[Finding]:
    """Back edges of the in-place graph (iterative depth-first search)."""
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    for start in nodes:
        if start in state:
            continue
        state[start] = 1
        path: list[tuple[int, Iterator[tuple[int, Loc]]]] = [(start, iter(nodes[start].edges))]
        while path:
            key, edges = path[-1]
            step = next(edges, None)
            if step is None:
                state[key] = 2
                path.pop()
                continue
            target, via = step
            if state.get(target) == 1:
                what = "this $ref" if via[-1:] == ("$ref",) else "this subschema"
                yield (
                    via,
                    f"{what} leads back to a schema that applies at the same place in the value,"
                    " so checking would never end; a recursive $ref must sit below a keyword"
                    " that descends into the value (properties, items, ...)",
                )
            elif target not in state:
                state[target] = 1
                path.append((target, iter(nodes[target].edges)))


def _expansion(nodes: dict[int, _Node]) -> Iterator[Finding]:
    """How many subschemas, and how deeply nested, one node applies in place (acyclic now)."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    for start in nodes:
        todo = [start]
        while todo:
            key = todo[-1]
            if key in size:  # pushed again by another parent before it was sized
                todo.pop()
                continue
            edges = nodes[key].edges
            pending = [t for t, _ in edges if t not in size]
            if pending:
                todo.extend(pending)
                continue
            todo.pop()
            size[key] = min(MAX_IN_PLACE + 1, 1 + sum(size[t] for t, _ in edges))
            depth[key] = 1 + max((depth[t] for t, _ in edges), default=0)
    for key, node in nodes.items():
        if size[key] > MAX_IN_PLACE:
            yield (
                node.loc,
                f"this schema applies more than {MAX_IN_PLACE} subschemas at one place in"
                " the value (through $ref, allOf, anyOf, ...), too many to check",
            )
            return
        if depth[key] > MAX_IN_PLACE_DEPTH:
            yield (
                node.loc,
                f"$ref and in-place applicators (allOf, not, if, ...) nest more than"
                f" {MAX_IN_PLACE_DEPTH} deep here, too deep to check",
            )
            return
