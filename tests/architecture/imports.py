"""Every import a module makes, resolved to absolute module names with the standard ``ast``.

Found wherever it stands: at the top, inside a function or method, under
``if TYPE_CHECKING:`` or in a ``try:`` block (type-only imports count: a layer that names an
upper layer's types depends on it), and ``importlib.import_module`` / ``__import__`` called
with a literal string. Relative imports resolve against the importing module's package, and
``from pkg import name`` resolves to the module ``pkg.name`` when that is a module, so
``from .. import runner`` is an import of ``openwop_eval.runner``, not of ``openwop_eval``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = "openwop_eval"
DYNAMIC = frozenset({"import_module", "__import__"})
"""Calls that import the module their first argument names."""


@dataclass(frozen=True)
class Source:
    """One module of the package: its dotted name, whether it is a package, and its text."""

    name: str
    text: str
    is_package: bool = False

    @property
    def package(self) -> str:
        """The package that relative imports in this module start from."""
        return self.name if self.is_package else self.name.rpartition(".")[0]


@dataclass(frozen=True)
class Import:
    """One imported module, absolute, and the line that imports it."""

    target: str
    line: int
    dynamic: bool = False
    """Named by a call (``import_module``, ``__import__``), not an import statement."""
    name: str | None = None
    """What ``from target import name`` takes when it is not a module: a function, a class."""


def sources(package_dir: Path, root: str = ROOT) -> list[Source]:
    """Every module of the package at ``package_dir``, named as Python names it."""
    found = []
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        dotted = ".".join((root, *(parts[:-1] if is_package else parts)))
        found.append(Source(dotted, path.read_text(), is_package))
    return found


@cache
def imports(source: Source, modules: frozenset[str]) -> tuple[Import, ...]:
    """Every module ``source`` imports, once a line; ``modules`` names every module of the
    project."""
    return tuple(dict.fromkeys(_imports(source, modules)))


def _imports(source: Source, modules: frozenset[str]) -> Iterator[Import]:
    for node in ast.walk(parse(source.text)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = _base(source, node.level, node.module)
            for alias in node.names:
                child = f"{base}.{alias.name}"
                if child in modules:
                    yield Import(child, node.lineno)
                else:
                    yield Import(base, node.lineno, name=alias.name)
        elif isinstance(node, ast.Call) and (name := _dynamic(node)) is not None:
            yield Import(_absolute(source, name, _literal(node, 1, "package")), node.lineno, True)


@cache
def parse(text: str) -> ast.Module:
    """A module's syntax tree, parsed once for all the checks."""
    return ast.parse(text)


def _base(source: Source, level: int, module: str | None) -> str:
    """The module a ``from`` import names, made absolute."""
    if not level:
        return module or ""
    parts = source.package.split(".")
    if level - 1 >= len(parts):
        raise ValueError(f"{source.name}: relative import beyond the top-level package")
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _dynamic(node: ast.Call) -> str | None:
    """The module a call of ``import_module`` or ``__import__`` names, when it is a literal."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return _literal(node, 0, "name") if called in DYNAMIC else None


def _literal(node: ast.Call, position: int, keyword: str) -> str | None:
    """A call's argument, given by position or keyword, when it is a literal string."""
    given = [k.value for k in node.keywords if k.arg == keyword]
    value = node.args[position] if len(node.args) > position else next(iter(given), None)
    return value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None


def _absolute(source: Source, name: str, package: str | None) -> str:
    """A dynamic import's name made absolute: a relative one against its literal ``package``,
    else against the importing module's own package."""
    level = len(name) - len(name.lstrip("."))
    if not level:
        return name
    anchor = Source(f"{package}.__init__", "") if package else source
    return _base(anchor, level, name[level:] or None)
