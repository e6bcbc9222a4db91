"""The compare package is pure analysis: the grading core and the standard library only,
and the public names other callers rely on."""

from __future__ import annotations

import sys

import openwop_eval.compare as compare_package
from tests.test_architecture import PACKAGE, _package_imports, imports_of

ALLOWED_RANDOMNESS = {"random"}  # seeded random.Random only; why this is not in core/


def test_compare_imports_only_the_core_and_the_standard_library() -> None:
    for path in sorted((PACKAGE / "compare").glob("*.py")):
        ours = _package_imports(path) - {"compare", "core"}
        assert not ours, f"{path.name} imports openwop_eval.{sorted(ours)}"
        for name in imports_of(path):
            top = name.split(".")[0]
            if name.startswith(".") or top in ("__future__", "openwop_eval"):
                continue
            assert top in sys.stdlib_module_names, f"{path.name} imports {name}"


def test_randomness_is_seeded_where_it_is_drawn() -> None:
    text = (PACKAGE / "compare" / "stats.py").read_text()
    assert "random.Random(seed)" in text
    others = [p for p in (PACKAGE / "compare").glob("*.py") if p.name != "stats.py"]
    assert all(not {n.split(".")[0] for n in imports_of(p)} & ALLOWED_RANDOMNESS for p in others)


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
