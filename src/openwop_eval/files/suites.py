"""Reading suite files (JSON or YAML) into validated :class:`Suite` models.

Validation reports every problem at once, each with its JSON path and, where the parser
can tell, its line: structure against the shipped JSON Schema, then the semantic checks of
:func:`openwop_eval.core.check_suite`. Nothing is graded from a suite that has an error.

Before either, the document must be plain JSON data within the limits of
:mod:`openwop_eval.base.limits` (from a file or not: the host validates stored documents), and a
suite over a size limit is refused before the per-task validation it would make slow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pydantic
from jsonschema.protocols import Validator

from .. import schemas
from ..base import limits
from ..core import Problem, Suite, SuiteError, check_suite
from ..core import names as n
from ..core.problems import Loc, errors_in
from ..core.tool_refs import ToolSources, check_tool_refs
from .documents import LineMap, check_values, read_document
from .schema_errors import model_validator, schema_problems


@dataclass(frozen=True)
class LoadedSuite:
    """A valid suite, where it came from, and the warnings it raised."""

    suite: Suite
    source: str | None = None
    warnings: list[Problem] = field(default_factory=list)


def _validate(
    doc: Any,
    line_of: Callable[[Loc], int | None] | None,
    values_checked: bool,
    tools: ToolSources | None = None,
) -> list[Problem]:
    problems = list(_over_size_limits(doc))  # shallow and cheap: before any full walk
    if not problems and not values_checked:
        problems = check_values(doc)
    if not problems:
        problems = [*_over_trial_limits(doc), *schema_problems(_validator(), doc)]
        problems += check_suite(doc)
        if tools is not None:
            problems += check_tool_refs(doc, tools)
    if line_of is not None:
        problems = [p.at_line(line_of(p.loc)) for p in problems]
    return sorted(problems, key=lambda p: (p.line or 0, p.path, p.message))


@cache
def _validator() -> Validator:
    """The suite schema's validator, built once: it is stateless."""
    return model_validator(schemas.load(schemas.SUITE_SCHEMA))


def _over_size_limits(doc: Any) -> Iterator[Problem]:
    """Ids, tasks and steps past their limits; checked first, so a huge suite is refused
    at once."""
    yield from _long_id(doc, ("suiteId",), limits.MAX_SUITE_ID_CHARS)
    yield from _long_id(doc, ("version",), limits.MAX_SUITE_VERSION_CHARS)
    tasks = doc.get("tasks") if isinstance(doc, dict) else None
    if not isinstance(tasks, list):
        return
    if len(tasks) > limits.MAX_TASKS:
        yield Problem(
            ("tasks",),
            f"{len(tasks):,} tasks is over the limit of {limits.MAX_TASKS:,} tasks per suite",
        )
        return
    for i, task in enumerate(tasks):
        yield from _long_id(task, ("tasks", i, "taskId"), limits.MAX_TASK_ID_CHARS)
        steps = _get(task, "expected", n.TRAJECTORY, n.TRAJ_STEPS)
        if isinstance(steps, list) and len(steps) > limits.MAX_STEPS:
            yield Problem(
                ("tasks", i, "expected", n.TRAJECTORY, n.TRAJ_STEPS),
                f"{len(steps):,} steps is over the limit of {limits.MAX_STEPS:,} steps"
                " per trajectory",
            )


def _long_id(owner: Any, loc: Loc, limit: int) -> Iterator[Problem]:
    value = owner.get(loc[-1]) if isinstance(owner, dict) else None
    if isinstance(value, str) and len(value) > limit:
        yield Problem(loc, f"{len(value):,} characters is over the limit of {limit} for {loc[-1]}")


def _over_trial_limits(doc: Any) -> Iterator[Problem]:
    count = _get(doc, n.TRIALS, n.TRIALS_COUNT)
    if not isinstance(count, int) or isinstance(count, bool):
        return  # the schema reports it
    loc = (n.TRIALS, n.TRIALS_COUNT)
    if count > limits.MAX_TRIALS_COUNT:
        yield Problem(
            loc, f"{count:,} trials per task is over the limit of {limits.MAX_TRIALS_COUNT:,}"
        )
        return
    tasks = doc.get("tasks")
    total = count * len(tasks) if isinstance(tasks, list) else 0
    if total > limits.MAX_TRIALS_TOTAL:
        yield Problem(
            loc,
            f"{len(tasks):,} tasks × {count:,} trials is {total:,} trials; a run may have at"
            f" most {limits.MAX_TRIALS_TOTAL:,}",
        )


def _get(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def parse_suite(doc: Any, source: str | None = None, lines: LineMap | None = None) -> LoadedSuite:
    """Validate an already decoded suite; :class:`SuiteError` lists all problems."""
    return _parse(doc, source, lines, values_checked=False)


def _parse(
    doc: Any,
    source: str | None,
    lines: LineMap | None,
    values_checked: bool,
    tools: ToolSources | None = None,
) -> LoadedSuite:
    line_of = lines.line_of if lines else None
    problems = _validate(doc, line_of, values_checked, tools)
    if errors_in(problems):
        raise SuiteError(problems, source)
    try:
        suite = Suite.model_validate(doc)
    except pydantic.ValidationError as exc:  # the schema let through what the models refuse
        found = [Problem(tuple(e["loc"]), e["msg"]) for e in exc.errors(include_url=False)]
        found = [p.at_line(line_of(p.loc)) for p in found] if line_of else found
        raise SuiteError(problems + found, source) from None
    return LoadedSuite(suite, source, problems)


def suite_document(suite: Suite) -> dict[str, Any]:
    """The suite as the document a run stores: :func:`parse_suite` reads it back to an equal
    suite (an explicit ``null`` — an input, a match value — is kept, not dropped)."""
    return suite.model_dump(by_alias=True, exclude_unset=True, mode="json")


def load_suite(path: str | Path, tools: ToolSources | None = None) -> LoadedSuite:
    """Read, parse and validate a suite file (``.json``, ``.yaml`` or ``.yml``); given
    ``tools``, also warn of each trajectory tool they and the fixtures do not provide
    (:mod:`openwop_eval.core.tool_refs`)."""
    doc, lines, problems = read_document(Path(path))
    if problems:
        raise SuiteError(problems, str(path))
    return _parse(  # read_document checked the values
        doc, str(path), lines, values_checked=True, tools=tools
    )
