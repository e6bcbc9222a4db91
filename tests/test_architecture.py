"""Structure rules: each package and root module imports only what its layer rule allows, the
pure layers stay pure, and the public API is explicit. The rules are data in
tests/architecture/rules.py; docs/architecture.md's table is generated from them."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

import openwop_eval
from tests.architecture import table
from tests.architecture.checker import rule_problems, violations
from tests.architecture.imports import Source, imports, sources
from tests.architecture.rules import RULES, Rule

PACKAGE = Path(openwop_eval.__file__).parent
SOURCES = sources(PACKAGE)


def test_every_import_follows_the_layer_rules() -> None:
    assert violations(SOURCES) == []


def test_the_rules_are_layers() -> None:
    assert rule_problems() == []


def test_the_documented_table_is_the_rules() -> None:
    text = table.DOC.read_text()
    assert table.documented(text) == table.table(), "python -m tests.architecture.table --write"


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


def _planted(module: str, code: str) -> list[str]:
    """The package's violations with ``code`` appended to ``module`` (added when new)."""
    planted = [replace(s, text=f"{s.text}\n{code}\n") if s.name == module else s for s in SOURCES]
    if all(s.name != module for s in SOURCES):
        assert module.startswith("openwop_eval.new"), f"{module} is not a module of the package"
        planted.append(Source(module, code, is_package=code == "# package"))
    return violations(planted)


LAZY = "def later():\n    {}\n"
TRY = "try:\n    {}\nexcept ImportError:\n    pass\n"
METHOD = "class Later:\n    def run(self):\n        {}\n"


@pytest.mark.parametrize(
    ("module", "code", "caught"),
    [
        # every form of a project import, each where its layer forbids it
        ("openwop_eval.log.event_names", "from .. import runner", "openwop_eval.runner (runner)"),
        (
            "openwop_eval.log.event_names",
            "from ..runner import api",
            "openwop_eval.runner.api (runner)",
        ),
        ("openwop_eval.log", "from ..store.sql import x", "openwop_eval.store.sql (store)"),
        ("openwop_eval.core.names", "import openwop_eval.server", "openwop_eval.server (server)"),
        ("openwop_eval.core.names", "import openwop_eval", "openwop_eval (__init__)"),
        ("openwop_eval.core", "import openwop_eval.cli.main as m", "openwop_eval.cli.main (cli)"),
        (
            "openwop_eval.store.sql",
            "from openwop_eval import runner",
            "openwop_eval.runner (runner)",
        ),
        ("openwop_eval.store.sql", "from openwop_eval.cli import x", "openwop_eval.cli (cli)"),
        ("openwop_eval.store.migrations.env", "from ...runner import api", "(runner)"),
        ("openwop_eval.core.grading", LAZY.format("from ..store import Store"), "(store)"),
        ("openwop_eval.core.grading", METHOD.format("import openwop_eval.log"), "(log)"),
        (
            "openwop_eval.core.suite",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..runner import R",
            "(runner)",
        ),
        (
            "openwop_eval.log.reader",
            "try:\n    from .. import server\nexcept ImportError:\n    pass",
            "(server)",
        ),
        (
            "openwop_eval.core.grading",
            'import importlib\nimportlib.import_module("openwop_eval.server")',
            "openwop_eval.server (server)",
        ),
        (
            "openwop_eval.runner.run",
            'from importlib import import_module\nimport_module("..cli.main", __package__)',
            "openwop_eval.cli.main (cli)",
        ),
        ("openwop_eval.store", '__import__("openwop_eval.server.app")', "(server)"),
        ("openwop_eval.core.names", 'import_module(name="openwop_eval.cli")', "(cli)"),
        ("openwop_eval.log", 'import_module(".main", package="openwop_eval.cli")', "(cli)"),
        ("openwop_eval.log", 'import_module("..server", "openwop_eval.cli")', "server (server)"),
        ("openwop_eval.pytest_plugin.run", "from ..cli import main", "openwop_eval.cli.main (cli)"),
        ("openwop_eval.pytest_plugin.run", "from .. import cli", "openwop_eval.cli (cli)"),
        ("openwop_eval.runner.run", "from ..reports import terminal", "(reports)"),
        # the front door re-exports lower layers: inside the package only its version
        ("openwop_eval.reports.model", "from .. import run_suite", "takes run_suite from the"),
        ("openwop_eval.server.app", "import openwop_eval", "takes all of it from the"),
        ("openwop_eval.cli.main", 'import_module("openwop_eval")', "takes all of it from the"),
        # a finer rule is a target of its own, and holds its modules to less than the package
        (
            "openwop_eval.runner.result",
            "from . import spec",
            "openwop_eval.runner.spec (runner.spec)",
        ),
        ("openwop_eval.runner.baseline", "from .api import x", "openwop_eval.runner.api (runner)"),
        ("openwop_eval.reports.model", "from ..runner import api", "(runner)"),
        ("openwop_eval.log.event_names", "from .. import name", "openwop_eval (__init__)"),
        ("openwop_eval.log.event_names", "import openwop_eval.nowhere", "which no rule covers"),
        # purity: no I/O, clock, randomness or network, however imported or called
        ("openwop_eval.log.event_names", "import time", "imports time, which log may not"),
        ("openwop_eval.log.event_names", LAZY.format("import os.path"), "imports os.path"),
        ("openwop_eval.compare.output", "from datetime import datetime", "imports datetime"),
        ("openwop_eval.core.names", "import sqlalchemy", "imports sqlalchemy"),
        ("openwop_eval.core.names", "import importlib", "imports importlib"),
        ("openwop_eval.compare.stats", '__import__("socket")', "imports socket"),
        ("openwop_eval.protocol.deployments", "import uuid", "imports uuid"),
        ("openwop_eval.core.names", LAZY.format('open("x")'), "calls open()"),
        ("openwop_eval.log.event_names", LAZY.format("print(1)"), "calls print()"),
        ("openwop_eval.compare.stats", "x = random.random()", "uses random.random"),
        ("openwop_eval.compare.stats", "from random import shuffle", "uses random.shuffle"),
        ("openwop_eval.compare.stats", "draw = random", "uses random.*"),
        ("openwop_eval.compare.stats", '__import__("random").seed()', "imports random"),
        ("openwop_eval.compare.sides", "import random", "imports random"),
        # a package or root module with no rule
        ("openwop_eval.newcomer", "x = 1", "openwop_eval.newcomer: a package or root module"),
        ("openwop_eval.newpackage", "# package", "openwop_eval.newpackage: a package or root"),
        ("openwop_eval.pytest_plugin.run", "from ..... import x", "cannot be read"),
    ],
)
def test_a_planted_import_is_caught(module: str, code: str, caught: str) -> None:
    found = _planted(module, code)
    assert found, f"{code!r} in {module} passed"
    assert any(caught in line for line in found), found
    assert all(line.startswith(f"{module}:") for line in found), found


def test_a_rule_that_names_no_module_is_caught() -> None:
    rules = {**RULES, "log.gone": Rule("pure", "a stale rule", pure=True)}
    assert violations(SOURCES, rules) == ["rule 'log.gone' names no module of the package"]


@pytest.mark.parametrize(
    ("key", "rule", "caught"),
    [
        ("core", Rule("core", "", frozenset({"runner"}), pure=True), "rule 'core' (core) allows"),
        (
            "log",
            Rule("pure", "", frozenset({"runtime"}), pure=True),
            "pure rule 'log' allows impure",
        ),
        ("runner", Rule("runner", "", frozenset({"nowhere"})), "has no rule"),
        ("server", Rule("shells", "", frozenset({"cli"})), "shell 'server' allows shell 'cli'"),
        ("runtime", Rule("leaves", "", frozenset({"base"})), None),
        ("llm", Rule("leaves", "", frozenset({"base", "runtime"})), None),
        ("runtime", Rule("leaves", "", frozenset({"protocol"})), "rule 'runtime' (leaves) allows"),
        ("runtime", Rule("upstairs", ""), "no layer 'upstairs'"),
    ],
)
def test_a_broken_rule_is_caught(key: str, rule: Rule, caught: str | None) -> None:
    rules = {**RULES, key: rule}
    found = rule_problems(rules)
    if caught is None:
        assert found == [], found
    else:
        assert any(caught in line for line in found), found


def test_a_cycle_in_the_rules_is_caught() -> None:
    rules = {
        **RULES,
        "runtime": Rule("leaves", "", frozenset({"llm"})),
        "llm": Rule("leaves", "", frozenset({"runtime"})),
    }
    assert any("cycle" in line for line in rule_problems(rules))


PARTS = st.lists(st.sampled_from(["a", "b", "c"]), min_size=0, max_size=3)


@given(path=PARTS, is_package=st.booleans(), level=st.integers(0, 5), module=PARTS)
def test_relative_imports_resolve_as_python_resolves_them(
    path: list[str], is_package: bool, level: int, module: list[str]
) -> None:
    name = ".".join(["openwop_eval", *path])
    relative = "." * level + ".".join(module)
    if not relative:
        return  # names no module
    statement = Source(name, f"from {relative} import x", is_package or not path)
    called = replace(statement, text=f'import_module("{relative}", __package__)')
    try:
        expected = importlib.util.resolve_name(relative, statement.package)
    except ImportError:
        for source in (statement, called):
            with pytest.raises(ValueError, match="beyond the top-level package"):
                imports(source, frozenset())
        return
    assert [i.target for i in imports(statement, frozenset())] == [expected]
    assert [i.target for i in imports(statement, frozenset({f"{expected}.x"}))] == [f"{expected}.x"]
    assert [i.target for i in imports(called, frozenset())] == [expected]
