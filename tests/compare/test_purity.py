"""The compare package is pure analysis: the grading core and the standard library only,
and the public names other callers rely on."""

from __future__ import annotations

import openwop_eval.compare as compare_package
from tests.architecture.checker import violations
from tests.architecture.imports import imports
from tests.architecture.rules import PURE_EXCEPTIONS, RULES
from tests.test_architecture import SOURCES

COMPARE = [s for s in SOURCES if s.name.startswith("openwop_eval.compare")]
MODULES = frozenset(s.name for s in SOURCES)


def test_compare_imports_only_the_core_and_the_standard_library() -> None:
    assert RULES["compare"].may_import == {"core"}
    assert RULES["compare"].pure
    assert violations(COMPARE, package=MODULES) == []


def test_randomness_is_seeded_where_it_is_drawn() -> None:
    stats = next(s for s in COMPARE if s.name == "openwop_eval.compare.stats")
    assert "random.Random(seed)" in stats.text
    assert PURE_EXCEPTIONS[("compare.stats", "random")] == {"Random"}
    others = [s for s in COMPARE if s is not stats]
    assert all(i.target.split(".")[0] != "random" for s in others for i in imports(s, MODULES))


def test_the_public_api() -> None:
    assert {
        "CompareInputError",
        "TaskSide",
        "Side",
        "Comparison",
        "read_side",
        "compare",
        "regression_reasons",
        "comparison_dict",
        "comparison_markdown",
        "MIN_TASKS",
    } <= set(compare_package.__all__)
    assert compare_package.MIN_TASKS == 6
    assert all(hasattr(compare_package, name) for name in compare_package.__all__)
