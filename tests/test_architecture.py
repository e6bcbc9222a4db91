"""Structure rules: the grading core is pure and self-contained; the public API is explicit."""

from __future__ import annotations

import ast
from pathlib import Path
from types import ModuleType

import openwop_eval

PACKAGE = Path(openwop_eval.__file__).parent
CORE = PACKAGE / "core"
# No I/O, clocks, randomness or processes in the core; only these third-party libraries.
FORBIDDEN_IN_CORE = {
    "os",
    "io",
    "sys",
    "time",
    "datetime",
    "random",
    "secrets",
    "socket",
    "sqlite3",
    "subprocess",
    "asyncio",
    "threading",
    "pathlib",
    "shutil",
    "tempfile",
    "urllib",
    "http",
    "logging",
    "uuid",
}
ALLOWED_THIRD_PARTY = {
    "pydantic",
    "pydantic_core",
    "jsonschema",
    "referencing",
    "rfc8785",
    "orjson",
    "re2",
}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                found.add("." * node.level + (node.module or ""))
            elif node.module:
                found.add(node.module)
    return found


def test_core_imports_nothing_impure_and_nothing_outside_itself() -> None:
    for path in CORE.glob("*.py"):
        for name in imports_of(path):
            top = name.split(".")[0]
            if name.startswith(".."):
                raise AssertionError(f"{path.name} reaches outside the core: {name}")
            if name.startswith(".") or top in ("__future__",):
                continue
            assert top not in FORBIDDEN_IN_CORE, f"{path.name} imports {name}"
            assert top in ALLOWED_THIRD_PARTY or top in _stdlib(), f"{path.name} imports {name}"


def _stdlib() -> set[str]:
    import sys

    return set(sys.stdlib_module_names)


def test_modules_stay_small() -> None:
    for path in PACKAGE.rglob("*.py"):
        assert len(path.read_text().splitlines()) <= 400, f"{path} is over 400 lines"


def test_public_api_is_exactly_all() -> None:
    public = {
        name
        for name in dir(openwop_eval)
        if not name.startswith("_") and not isinstance(getattr(openwop_eval, name), ModuleType)
    }
    assert public == set(openwop_eval.__all__) - {"__version__"}


LAYERS: dict[str, set[str]] = {
    "log": {"runner", "store", "server", "cli", "agents", "judges", "conformance"},
    "store": {"runner", "server", "cli", "log", "conformance"},
    "runner": {"server", "cli", "conformance"},
    "agents": {"runner", "server", "cli", "conformance"},
    "judges": {"runner", "server", "cli", "conformance"},
    "conformance": {"runner", "server", "cli"},
    "traces": {"runner", "store", "server", "cli", "judges", "conformance"},
    "html": {"server", "cli", "conformance"},
    "compare": {
        "runner",
        "store",
        "server",
        "cli",
        "agents",
        "judges",
        "conformance",
        "traces",
        "log",
        "html",
    },
}
"""Per layer of the package, the layers it must never import."""


def _package_imports(path: Path) -> set[str]:
    """The top-level parts of ``openwop_eval`` that ``path`` imports, relative or absolute."""
    parts = path.relative_to(PACKAGE).parts
    found = set()
    for name in imports_of(path):
        if name.startswith("."):
            level = len(name) - len(name.lstrip("."))
            base = list(parts[:-1])[: len(parts) - level]
            target = [*base, *filter(None, name.lstrip(".").split("."))]
        elif name.startswith("openwop_eval"):
            target = name.split(".")[1:]
        else:
            continue
        if target:
            found.add(target[0].removesuffix(".py"))
    return found


def test_layers_import_only_downwards() -> None:
    for layer, forbidden in LAYERS.items():
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            bad = _package_imports(path) & forbidden
            assert not bad, f"{path.relative_to(PACKAGE)} imports {sorted(bad)}"
