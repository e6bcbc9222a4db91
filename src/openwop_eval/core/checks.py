"""Semantic checks of a suite document: what a schema cannot say.

They run on the raw decoded document, beside the structural (JSON Schema) validation, and
tolerate any shape, so one pass reports every problem at once: a ``taskId`` used twice,
``k > count``, a golden task without ``match``, a bad regex or JSON Schema in a matcher,
rubric weights that cannot be normalised, contradictory trajectory constraints…
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeGuard

from . import names as n
from .canonical import is_number
from .conversation_checks import check_conversation
from .gate_checks import check_gate
from .matchers import compile_args
from .problems import Loc, Problem
from .trajectory import ToolPattern


def check_suite(doc: Any) -> list[Problem]:
    """Every semantic problem (and warning) in a decoded suite document."""
    if not isinstance(doc, dict):
        return []
    problems: list[Problem] = []
    problems.extend(_check_trials(doc.get(n.TRIALS)))
    problems.extend(_check_thresholds(doc.get("thresholds")))
    tasks = doc.get("tasks")
    if isinstance(tasks, list):
        problems.extend(_check_task_ids(tasks))
        for i, task in enumerate(tasks):
            if isinstance(task, dict):
                problems.extend(_check_task(task, ("tasks", i)))
    problems.extend(check_gate(doc))
    return problems


def _check_trials(trials: Any) -> Iterator[Problem]:
    if not isinstance(trials, dict):
        return
    count, k = trials.get(n.TRIALS_COUNT, 1), trials.get(n.TRIALS_K)
    if _is_int(count) and _is_int(k) and k > count:
        yield Problem(
            (n.TRIALS, n.TRIALS_K), f"k is {k} but count is {count}; k must be between 1 and count"
        )


def _check_thresholds(thresholds: Any) -> Iterator[Problem]:
    if not isinstance(thresholds, dict):
        return
    if thresholds.get("passScore") == 0:
        yield Problem(
            ("thresholds", "passScore"),
            "passScore 0 lets every task pass, even one whose every trial failed",
            severity="warning",
        )


def _check_task_ids(tasks: list[Any]) -> Iterator[Problem]:
    first: dict[str, int] = {}
    for i, task in enumerate(tasks):
        task_id = task.get("taskId") if isinstance(task, dict) else None
        if not isinstance(task_id, str):
            continue
        if task_id in first:
            yield Problem(
                ("tasks", i, "taskId"),
                f"taskId {task_id!r} is already used by tasks[{first[task_id]}]",
            )
        else:
            first[task_id] = i


def _check_task(task: dict[str, Any], loc: Loc) -> Iterator[Problem]:
    expected = task.get("expected")
    if not isinstance(expected, dict):
        yield from check_conversation(task, loc, _check_trajectory)
        return
    here = (*loc, "expected")
    kind = expected.get("kind")
    if kind == "golden":
        if "match" not in expected:
            yield Problem(here, "a golden task needs match: {strategy, value}")
        if "rubric" in expected:
            yield Problem((*here, "rubric"), "a golden task takes match, not rubric")
    elif kind == "rubric":
        if "rubric" not in expected:
            yield Problem(here, "a rubric task needs rubric: [{criterion, weight}, ...]")
        if "match" in expected:
            yield Problem((*here, "match"), "a rubric task takes rubric, not match")
        yield from _check_weights(expected.get("rubric"), (*here, "rubric"))
    trajectory = expected.get(n.TRAJECTORY)
    if isinstance(trajectory, dict):
        yield from _check_trajectory(trajectory, (*here, n.TRAJECTORY))
    yield from check_conversation(task, loc, _check_trajectory)


def _check_weights(rubric: Any, loc: Loc) -> Iterator[Problem]:
    if not isinstance(rubric, list) or not rubric:
        return
    weights = [c.get("weight") for c in rubric if isinstance(c, dict)]
    numbers = [w for w in weights if is_number(w)]
    if len(numbers) != len(rubric):
        return  # the schema check reports the malformed criteria
    total = sum(numbers)
    if total == 0:
        yield Problem(
            loc,
            "the criteria weights sum to 0, so the score cannot be normalised;"
            " give at least one criterion a positive weight",
        )
    elif abs(total - 1) > 1e-9:
        yield Problem(
            loc,
            f"the criteria weights sum to {total:g}, not 1; scores are normalised by the sum",
            severity="warning",
        )


def _check_trajectory(traj: dict[str, Any], loc: Loc) -> Iterator[Problem]:
    steps = traj.get(n.TRAJ_STEPS, [])
    steps = steps if isinstance(steps, list) else []
    exact = traj.get(n.TRAJ_ARGS_MATCH) == n.ARGS_EXACT
    for i, step in enumerate(steps):
        if isinstance(step, dict) and isinstance(step.get(n.TRAJ_STEP_ARGS), dict):
            args_loc = (*loc, n.TRAJ_STEPS, i, n.TRAJ_STEP_ARGS)
            yield from compile_args(step[n.TRAJ_STEP_ARGS], exact, args_loc)[1]

    forbidden = traj.get(n.TRAJ_FORBIDDEN, [])
    patterns = (
        [ToolPattern.of(f) for f in forbidden if isinstance(f, str)]
        if isinstance(forbidden, list)
        else []
    )
    for i, step in enumerate(steps):
        tool = step.get(n.TRAJ_STEP_TOOL) if isinstance(step, dict) else None
        if not isinstance(tool, str) or ToolPattern.of(tool).regex is not None:
            continue
        hit = next((p for p in patterns if p.matches(tool)), None)
        if hit is not None:
            yield Problem(
                (*loc, n.TRAJ_STEPS, i, n.TRAJ_STEP_TOOL),
                f"step tool {tool!r} is also forbidden ({hit.text!r}); no trial can"
                " match this trajectory",
            )

    max_calls = traj.get(n.TRAJ_MAX_CALLS)
    if _is_int(max_calls) and max_calls < len(steps):
        yield Problem(
            (*loc, n.TRAJ_MAX_CALLS),
            f"maxCalls is {max_calls} but there are {len(steps)} steps; no trial can"
            " match this trajectory",
        )

    if not steps and not forbidden and not traj.get(n.TRAJ_BEFORE) and max_calls is None:
        yield Problem(
            loc, "this trajectory has no constraints, so every trial matches it", severity="warning"
        )


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
