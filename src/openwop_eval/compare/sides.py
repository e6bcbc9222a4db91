"""One side of a comparison: an ``EvalSummary`` read strictly, every problem located.

A summary may come from this tool or from any other OpenWOP host, so nothing is trusted:
each member read is checked for its type and range, and the first problem names the source
and the JSON path. Members this reader does not use are ignored.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Final

from ..core import OpenwopEvalError
from ..core.problems import Loc, format_loc
from ..core.suite import SUITE_ID_PATTERN, TASK_ID_PATTERN, VERSION_PATTERN
from ..core.versions import REPORT_VERSION, version_problem

MAX_SIDE_TASKS: Final = 10_000
"""Tasks on one side: the suite limit (``openwop_eval.base.limits.MAX_TASKS``). It bounds the
exact sign test and the bootstrap before they start."""

_MAX_ID_CHARS = 200  # the store's column widths (openwop_eval.base.limits)
_MAX_VERSION_CHARS = 40
_MAX_COUNT = 2**53 - 1  # the largest integer a JSON number carries exactly


class CompareInputError(OpenwopEvalError, ValueError):
    """A side cannot be compared: ``source`` and the JSON ``loc`` say where, ``message`` why."""

    def __init__(self, message: str, source: str | None = None, loc: Loc = ()) -> None:
        self.message = message
        self.source = source
        self.loc = loc
        where = f"{source} {format_loc(loc)}: " if source is not None else ""
        super().__init__(f"{where}{message}")

    @property
    def path(self) -> str:
        return format_loc(self.loc)


@dataclass(frozen=True)
class TaskSide:
    """One task of one side. ``gated_score`` and ``passed`` are the RFC 0246 gated values."""

    task_id: str
    score: float
    gated_score: float
    passed: bool
    trials: int
    trials_passed: int

    @property
    def pass_rate(self) -> float:
        """The share of trials whose verdict passed (one trial when no ``trials`` block)."""
        return self.trials_passed / self.trials

    @property
    def flaky(self) -> bool:
        return 0 < self.trials_passed < self.trials


@dataclass(frozen=True)
class Side:
    """A summary reduced to what a comparison needs; ``source`` labels it (a run id, a file)."""

    source: str
    suite_id: str
    suite_version: str
    aggregate_score: float
    gated_aggregate_score: float
    passed: bool
    tasks: tuple[TaskSide, ...]


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, loc: Loc, message: str) -> CompareInputError:
        return CompareInputError(message, self.source, loc)

    def member(self, obj: dict[str, Any], loc: Loc, key: str) -> Any:
        if key not in obj:
            raise self.fail(loc, f"missing the member {key!r}")
        return obj[key]

    def mapping(self, value: object, loc: Loc, what: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(loc, f"expected {what} (an object); got {_kind(value)}")
        if not all(isinstance(key, str) for key in value):
            raise self.fail(loc, f"expected {what}: an object whose keys are strings")
        return value

    def fraction(self, value: object, loc: Loc) -> float:
        """A score: a finite number in [0, 1] (``true`` is not a number)."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(loc, f"expected a number in [0, 1]; got {_kind(value)}")
        if not 0 <= value <= 1:  # NaN fails this too; an int is never converted before it
            raise self.fail(loc, f"expected a number in [0, 1]; got {_number(value)}")
        return float(value)

    def boolean(self, value: object, loc: Loc) -> bool:
        if not isinstance(value, bool):
            raise self.fail(loc, f"expected true or false; got {_kind(value)}")
        return value

    def count(self, value: object, loc: Loc, low: int, high: int = _MAX_COUNT) -> int:
        bound = f"an integer in [{low}, {high}]" if high < _MAX_COUNT else f"an integer ≥ {low}"
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(loc, f"expected {bound}; got {_kind(value)}")
        if not low <= value <= high:
            raise self.fail(loc, f"expected {bound}; got {_number(value)}")
        return value

    def ident(self, value: object, loc: Loc, pattern: str, limit: int) -> str:
        if not isinstance(value, str):
            raise self.fail(loc, f"expected a string; got {_kind(value)}")
        if len(value) > limit or not re.fullmatch(pattern, value):
            shown = "a string that is too long" if len(value) > limit else ascii(value)
            raise self.fail(loc, f"expected an id matching {pattern}; got {shown}")
        return value


def read_side(summary: object, source: str) -> Side:
    """A :class:`Side` from an ``EvalSummary`` (ours or another host's), or from our JSON
    report (``{"reportVersion", "runId", "summary": {…}}``), whose ``summary`` is taken —
    a report of a newer ``reportVersion`` than this version reads is refused.

    ``gatedScore`` absent means ``score`` and ``gatedAggregateScore`` absent means
    ``aggregateScore`` (RFC 0246 presence). Raises :class:`CompareInputError`, located.
    """
    read = _Reader(source)
    root = read.mapping(summary, (), "an EvalSummary")
    loc: Loc = ()
    if "reportVersion" in root:  # our report; an EvalSummary is closed and has no such member
        problem = version_problem("reportVersion", root["reportVersion"], REPORT_VERSION)
        if problem is not None:
            raise read.fail(("reportVersion",), problem)
        loc = ("summary",)
        root = read.mapping(read.member(root, (), "summary"), loc, "an EvalSummary")
    suite_id = read.ident(
        read.member(root, loc, "suiteId"), (*loc, "suiteId"), SUITE_ID_PATTERN, _MAX_ID_CHARS
    )
    version_loc = (*loc, "suiteVersion")
    version = read.member(root, loc, "suiteVersion")
    suite_version = read.ident(version, version_loc, VERSION_PATTERN, _MAX_VERSION_CHARS)
    aggregate = read.fraction(read.member(root, loc, "aggregateScore"), (*loc, "aggregateScore"))
    gated = root.get("gatedAggregateScore", aggregate)
    gated_aggregate = read.fraction(gated, (*loc, "gatedAggregateScore"))
    passed = read.boolean(read.member(root, loc, "passed"), (*loc, "passed"))
    tasks = read.member(root, loc, "tasks")
    if not isinstance(tasks, list):
        raise read.fail((*loc, "tasks"), f"expected an array of tasks; got {_kind(tasks)}")
    if len(tasks) > MAX_SIDE_TASKS:
        message = f"{len(tasks):,} tasks; the limit is {MAX_SIDE_TASKS:,}"
        raise read.fail((*loc, "tasks"), message)
    return Side(
        source=source,
        suite_id=suite_id,
        suite_version=suite_version,
        aggregate_score=aggregate,
        gated_aggregate_score=gated_aggregate,
        passed=passed,
        tasks=_tasks(read, tasks, (*loc, "tasks")),
    )


def _tasks(read: _Reader, tasks: list[Any], loc: Loc) -> tuple[TaskSide, ...]:
    seen: dict[str, int] = {}
    out = []
    for index, value in enumerate(tasks):
        task = _task(read, value, (*loc, index))
        if task.task_id in seen:
            where = (*loc, index, "taskId")
            raise read.fail(
                where, f"duplicate task id {task.task_id!r} (also at [{seen[task.task_id]}])"
            )
        seen[task.task_id] = index
        out.append(task)
    return tuple(out)


def _task(read: _Reader, value: object, loc: Loc) -> TaskSide:
    task = read.mapping(value, loc, "a task summary")
    task_id = read.ident(
        read.member(task, loc, "taskId"), (*loc, "taskId"), TASK_ID_PATTERN, _MAX_ID_CHARS
    )
    score = read.fraction(read.member(task, loc, "score"), (*loc, "score"))
    passed = read.boolean(read.member(task, loc, "passed"), (*loc, "passed"))
    gated = read.fraction(task.get("gatedScore", score), (*loc, "gatedScore"))
    trials, trials_passed = 1, int(passed)  # no trials block: one trial, its verdict the task's
    if "trials" in task:
        block_loc = (*loc, "trials")
        block = read.mapping(task["trials"], block_loc, "a trials block")
        trials = read.count(read.member(block, block_loc, "count"), (*block_loc, "count"), 1)
        stats_loc = (*block_loc, "trialStats")
        stats = read.mapping(read.member(block, block_loc, "trialStats"), stats_loc, "trialStats")
        passed_loc = (*stats_loc, "passed")
        trials_passed = read.count(read.member(stats, stats_loc, "passed"), passed_loc, 0, trials)
    return TaskSide(task_id, score, gated, passed, trials, trials_passed)


def _kind(value: object) -> str:
    """What a value is, never the value itself (a summary from elsewhere may carry anything)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {_number(value)}"
    names = {str: "a string", list: "an array", dict: "an object"}
    return next(
        (name for kind, name in names.items() if isinstance(value, kind)), "a non-JSON value"
    )


def _number(value: float) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, int) and value.bit_length() > 128:  # never converted: str() may refuse
        return "a very large integer" if value > 0 else "a very large negative integer"
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"
