"""bench/ is one package by subject: its imports resolve inside it, no module is named like one
of openwop_eval's, only the bench/all driver touches sys.path, and every bench path or link
the docs give exists."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
PACKAGE = ROOT / "src" / "openwop_eval"
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
BENCH_DOCS = sorted(BENCH.glob("*.md"))
LINK = re.compile(r"\]\(([^)\s]+)\)")
PATH = re.compile(r"bench/[\w./-]*\w")
MODULE = re.compile(r"-m\s+(bench(?:\.\w+)+)")
NOT_IN_GIT = ("bench/results", "bench/.venv")  # written by the benchmarks, ignored by git


def bench_modules() -> list[Path]:
    return sorted(p for p in BENCH.rglob("*.py") if "results" not in p.parts)


def imports(path: Path) -> Iterator[tuple[int, str, int]]:
    """(line, module, level) of every import in the file, lazy ones inside functions too."""
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name, 0) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield node.lineno, node.module or "", node.level


def resolves(dotted: str) -> bool:
    """Whether ``bench.a.b`` is a module or package of this tree."""
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"\s", "-", text)


def anchors(doc: Path) -> set[str]:
    lines = doc.read_text("utf-8").splitlines()
    return {slug(line.lstrip("#")) for line in lines if re.match(r"#{1,6} ", line)}


def test_no_bench_module_is_named_like_a_module_of_the_package() -> None:
    taken = {p.stem for p in PACKAGE.rglob("*.py")} | {p.name for p in PACKAGE.rglob("*/")}
    clashes = [
        str(p.relative_to(ROOT))
        for p in bench_modules()
        if p.stem in taken and p.stem not in ("__init__", "__main__")
    ]
    assert clashes == []


def test_bench_imports_go_through_the_bench_package_and_resolve() -> None:
    siblings = {p.stem for p in bench_modules()} - {"__init__"}
    problems = []
    for path in bench_modules():
        where = path.relative_to(ROOT)
        for line, module, level in imports(path):
            top = module.split(".")[0]
            if level:
                problems.append(f"{where}:{line}: relative import")
            elif top in siblings:
                problems.append(f"{where}:{line}: bare sibling import {module!r}")
            elif top == "bench" and not resolves(module):
                problems.append(f"{where}:{line}: {module!r} is no module of bench/")
    assert problems == []


def test_only_the_driver_touches_sys_path() -> None:
    touching = [str(p.relative_to(ROOT)) for p in bench_modules() if "sys.path" in p.read_text()]
    assert touching == []
    assert "sys.path.insert" in (BENCH / "all").read_text()


@pytest.mark.parametrize("doc", DOCS + BENCH_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_bench_path_and_module_the_docs_name_exists(doc: Path) -> None:
    text = doc.read_text("utf-8")
    missing = [
        found
        for found in set(PATH.findall(text))
        if not found.startswith(NOT_IN_GIT) and not (ROOT / found).exists()
    ]
    missing += [name for name in set(MODULE.findall(text)) if not resolves(name)]
    assert sorted(missing) == []


@pytest.mark.parametrize("doc", DOCS + BENCH_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_into_bench_and_within_it_lands(doc: Path) -> None:
    broken = []
    for target in LINK.findall(doc.read_text("utf-8")):
        if "://" in target:
            continue
        name, _, anchor = target.partition("#")
        file = (doc.parent / name).resolve() if name else doc
        if BENCH not in (file, *file.parents) and doc not in BENCH_DOCS:
            continue
        if not file.exists() or (anchor and file.suffix == ".md" and anchor not in anchors(file)):
            broken.append(target)
    assert broken == []
