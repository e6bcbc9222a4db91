"""Reading suite files (JSON or YAML) into validated :class:`Suite` models.

Validation reports every problem at once, each with its JSON path and, where the parser
can tell, its line: structure against the shipped JSON Schema, then the semantic checks of
:func:`openwop_eval.core.check_suite`. Nothing is graded from a suite that has an error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from . import schemas
from .core import Problem, Suite, SuiteError, check_suite
from .core.problems import Loc, errors_in
from .documents import LineMap, read_document
from .schema_errors import schema_problems


@dataclass(frozen=True)
class LoadedSuite:
    """A valid suite, where it came from, and the warnings it raised."""

    suite: Suite
    source: str | None = None
    warnings: list[Problem] = field(default_factory=list)


def validate_document(
    doc: Any, line_of: Callable[[Loc], int | None] | None = None
) -> list[Problem]:
    """Every problem in a decoded suite document, sorted by line and path."""
    validator = jsonschema.Draft202012Validator(schemas.load(schemas.SUITE_SCHEMA))
    problems = schema_problems(validator, doc) + check_suite(doc)
    if line_of is not None:
        problems = [p.at_line(line_of(p.loc)) for p in problems]
    return sorted(problems, key=lambda p: (p.line or 0, p.path, p.message))


def parse_suite(doc: Any, source: str | None = None, lines: LineMap | None = None) -> LoadedSuite:
    """Validate an already decoded suite; :class:`SuiteError` lists all problems."""
    problems = validate_document(doc, lines.line_of if lines else None)
    if errors_in(problems):
        raise SuiteError(problems, source)
    return LoadedSuite(Suite.model_validate(doc), source, problems)


def load_suite(path: str | Path) -> LoadedSuite:
    """Read, parse and validate a suite file (``.json``, ``.yaml`` or ``.yml``)."""
    doc, lines, problems = read_document(Path(path))
    if problems:
        raise SuiteError(problems, str(path))
    return parse_suite(doc, str(path), lines)
