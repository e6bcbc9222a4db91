"""The layer rules applied to a package's sources: every broken rule, located and named.

:func:`violations` takes (module name, source text) pairs, so a test can plant a forbidden
import in an in-memory copy of the package and see it caught.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cache
from graphlib import CycleError, TopologicalSorter

from .imports import ROOT, Import, Source, imports, parse
from .rules import (
    FRONT_DOOR_NAMES,
    IMPURE,
    LAYERS,
    PURE_BUILTINS,
    PURE_EXCEPTIONS,
    PURE_IMPORTS,
    RULES,
    SHELL_EDGES,
    Rule,
)

FRONT_DOOR = "__init__"
LAYER_NAMES = tuple(name for name, _ in LAYERS)


def relative(module: str) -> str:
    """``openwop_eval.log.event_names`` → ``log.names``; the package itself is ``__init__``."""
    return module.removeprefix(ROOT).removeprefix(".") or FRONT_DOOR


def is_project(module: str) -> bool:
    return module == ROOT or module.startswith(ROOT + ".")


def rule_key(module: str, rules: Mapping[str, Rule] = RULES) -> str | None:
    """The key of the finest rule that covers ``module``, or None when none does."""
    name = relative(module)
    covering = [key for key in rules if name == key or name.startswith(key + ".")]
    return max(covering, key=len, default=None)


def violations(
    sources: Iterable[Source],
    rules: Mapping[str, Rule] = RULES,
    package: frozenset[str] | None = None,
) -> list[str]:
    """Every import, call and module of ``sources`` that breaks ``rules``, one line each;
    ``package`` names all the package's modules when ``sources`` are only some of them."""
    listed = list(sources)
    modules = frozenset(s.name for s in listed) | (package or frozenset())
    found: list[str] = []
    for key in sorted({relative(s.name).split(".")[0] for s in listed} - set(rules)):
        found.append(f"{ROOT}.{key}: a package or root module with no rule (add one)")
    for key in sorted(k for k in rules if "." in k and not _exists(k, modules)):
        found.append(f"rule {key!r} names no module of the package")
    for source in listed:
        key = rule_key(source.name, rules)
        if key is not None:
            found.extend(_broken(source, key, rules, modules))
    return found


def _exists(key: str, modules: frozenset[str]) -> bool:
    return f"{ROOT}.{key}" in modules


def _broken(
    source: Source, key: str, rules: Mapping[str, Rule], modules: frozenset[str]
) -> Iterator[str]:
    rule = rules[key]
    where = f"{source.name}:"
    try:
        found = list(imports(source, modules))
    except (SyntaxError, ValueError) as error:
        yield f"{where} cannot be read: {error}"
        return
    for imported in found:
        at = f"{where}{imported.line}"
        if is_project(imported.target):
            target = rule_key(imported.target, rules)
            if target is None:
                yield f"{at} imports {imported.target}, which no rule covers"
            elif target != key and target not in rule.may_import:
                allowed = ", ".join(sorted(rule.may_import)) or "nothing of the package"
                yield f"{at} imports {imported.target} ({target}); {key} may import {allowed}"
            elif target == FRONT_DOOR != key and imported.name not in FRONT_DOOR_NAMES:
                taken = imported.name or "all of it"
                yield f"{at} takes {taken} from the front door; import it from where it is"
        elif rule.pure:
            yield from _impure(source, imported, at, key)
    if rule.pure:
        yield from _io_builtins(source, where)


def _impure(source: Source, imported: Import, at: str, key: str) -> Iterator[str]:
    target = imported.target
    top = target.split(".")[0]
    if top in PURE_IMPORTS:
        return
    allowed = PURE_EXCEPTIONS.get((relative(source.name), top))
    if allowed is None or imported.dynamic:  # an exception holds for import statements only
        yield f"{at} imports {target}, which {key} may not: it is pure (see PURE_IMPORTS)"
        return
    for name, line in sorted(set(_names_used(source, top))):
        if name not in allowed:
            yield f"{source.name}:{line} uses {top}.{name}; only {sorted(allowed)} may be"


def _names_used(source: Source, module: str) -> Iterator[tuple[str, int]]:
    """The names of ``module`` that ``source`` uses, as ``module.name`` or imported by name;
    the bare module anywhere else (passed around, aliased) counts as using all of it."""
    tree = parse(source.text)
    aliases = {module}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname or a.name for a in node.names if a.name == module}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module == module:
            yield from ((a.name, node.lineno) for a in node.names)
    attributes = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _named(node.value, aliases):
            attributes.add(id(node.value))
            yield node.attr, node.lineno
    for node in ast.walk(tree):
        if _named(node, aliases) and id(node) not in attributes:
            yield "*", node.lineno  # type: ignore[attr-defined]


def _named(node: ast.AST, names: set[str]) -> bool:
    return isinstance(node, ast.Name) and node.id in names


def _io_builtins(source: Source, where: str) -> Iterator[str]:
    for name, line in _calls(source.text):
        if name in PURE_BUILTINS:
            yield f"{where}{line} calls {name}(), which a pure module may not"


@cache
def _calls(text: str) -> tuple[tuple[str, int], ...]:
    """The functions ``text`` calls by a bare name, and where."""
    return tuple(
        (node.func.id, node.lineno)
        for node in ast.walk(parse(text))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    )


def rule_problems(
    rules: Mapping[str, Rule] = RULES,
    layers: Sequence[str] = LAYER_NAMES,
    shell_edges: Mapping[tuple[str, str], str] = SHELL_EDGES,
) -> list[str]:
    """What is wrong with the rules themselves: unknown layers or keys, an import of a higher
    layer, a shell importing a shell without a reason, a pure rule importing an impure one,
    a cycle, or an impure module on the pure list."""
    found = [f"rule {k!r}: no layer {r.layer!r}" for k, r in rules.items() if r.layer not in layers]
    if found:
        return found
    shells = layers[-1]
    for key, rule in rules.items():
        for target in sorted(rule.may_import):
            below = rules.get(target)
            if below is None:
                found.append(f"rule {key!r} allows {target!r}, which has no rule")
            elif layers.index(below.layer) > layers.index(rule.layer):
                found.append(f"rule {key!r} ({rule.layer}) allows {target!r} ({below.layer})")
            elif rule.layer == below.layer == shells and (key, target) not in shell_edges:
                found.append(f"shell {key!r} allows shell {target!r} with no SHELL_EDGES reason")
            elif rule.pure and not below.pure:
                found.append(f"pure rule {key!r} allows impure {target!r}")
    found += [f"SHELL_EDGES {e} is not allowed" for e in shell_edges if not _allows(rules, *e)]
    try:
        TopologicalSorter({k: r.may_import for k, r in rules.items()}).prepare()
    except CycleError as error:
        found.append(f"the rules form a cycle: {' → '.join(error.args[1])}")
    found += [f"PURE_IMPORTS names {name}, which is impure" for name in PURE_IMPORTS & IMPURE]
    return found


def _allows(rules: Mapping[str, Rule], key: str, target: str) -> bool:
    return key in rules and target in rules[key].may_import
