"""The tools a suite's trajectories name, against the tools a run would provide.

A required step naming a tool that nothing provides (``flights:serach``) cannot be followed:
the call is a miss, which fails the trial, so every trial fails. What provides tools is the
task's fixtures (``toolResponses``) and what the command line names beside them
(:class:`ToolSources`: a tool catalog, live tools, MCP upstreams). Each finding is a warning:
a suite may be run with tools ``validate`` was not told of.

* A step's tool must be provided; a glob step must match a provided tool. A task with no
  fixtures, checked with no sources, is not checked: nothing is known of its tools.
* A ``forbidden`` entry is usually a tool nothing provides (that is why it is forbidden), so
  it is flagged only when sources are given and it is a likely typo: not provided, but one
  edit (a letter added, dropped or changed, or two neighbours swapped) from a tool that is —
  the tool it meant to forbid stays allowed. A glob entry is never flagged: it is written
  to cover names, those not offered today included.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Set
from dataclasses import dataclass
from typing import Any

from . import names as n
from .problems import Loc, Problem
from .trajectory import ToolPattern

FIXTURES = "the task's fixtures"


@dataclass(frozen=True)
class ToolSources:
    """The tools a run is given beside each task's fixtures, and what gives them."""

    names: frozenset[str] = frozenset()
    given: tuple[str, ...] = ()
    """What provides them, in words (``"the tool catalog"``); empty: only each task's
    fixtures are known."""


def check_tool_refs(doc: Any, sources: ToolSources) -> list[Problem]:
    """A warning for each step (and likely-typo ``forbidden`` entry) of a decoded suite
    document that names a tool nothing provides; any shape is tolerated."""
    tasks = doc.get("tasks") if isinstance(doc, dict) else None
    if not isinstance(tasks, list):
        return []
    known = _Known(sources)
    problems: list[Problem] = []
    for i, task in enumerate(tasks):
        if isinstance(task, dict):
            problems.extend(_check_task(task, ("tasks", i), known))
    return problems


def _check_task(task: dict[str, Any], loc: Loc, known: _Known) -> Iterator[Problem]:
    expected = task.get("expected")
    traj = expected.get(n.TRAJECTORY) if isinstance(expected, dict) else None
    if not isinstance(traj, dict):
        return
    fixtures = _fixture_tools(task)
    givers = ((FIXTURES,) if fixtures else ()) + known.sources.given
    here = (*loc, "expected", n.TRAJECTORY)
    steps = traj.get(n.TRAJ_STEPS)
    if givers and isinstance(steps, list):
        for j, step in enumerate(steps):
            tool = step.get(n.TRAJ_STEP_TOOL) if isinstance(step, dict) else None
            if isinstance(tool, str) and tool:
                message = _unprovided(tool, fixtures, known, _either(givers))
                if message is not None:
                    step_loc = (*here, n.TRAJ_STEPS, j, n.TRAJ_STEP_TOOL)
                    yield Problem(step_loc, message, severity="warning")
    forbidden = traj.get(n.TRAJ_FORBIDDEN)
    if known.sources.given and isinstance(forbidden, list):
        for k, entry in enumerate(forbidden):
            if isinstance(entry, str) and entry:
                message = _typo(entry, fixtures, known, _either(givers))
                if message is not None:
                    entry_loc = (*here, n.TRAJ_FORBIDDEN, k)
                    yield Problem(entry_loc, message, severity="warning")


def _unprovided(tool: str, fixtures: Set[str], known: _Known, givers: str) -> str | None:
    """Why a step's tool can never be answered, or None when something provides it."""
    pattern = ToolPattern.of(tool)
    if pattern.regex is not None:
        if known.glob_provided(pattern, fixtures):
            return None
        return (
            f"{tool!r} matches no tool provided by {givers}: a call to a tool nothing"
            " provides is a miss, which fails the trial"
        )
    if tool in fixtures or tool in known.sources.names:
        return None
    return (
        f"{tool!r} is not a tool provided by {givers}: a call to it is a miss, which fails"
        f" the trial{known.suggestion(tool, fixtures)}"
    )


def _typo(entry: str, fixtures: Set[str], known: _Known, givers: str) -> str | None:
    """Why a forbidden entry looks like a typo of a provided tool, or None."""
    if ToolPattern.of(entry).regex is not None:
        return None
    if entry in fixtures or entry in known.sources.names:
        return None
    meant = known.typo_of(entry, fixtures)
    if meant is None:
        return None
    return (
        f"forbidden {entry!r} is not a tool provided by {givers}, but {meant!r} is, so"
        f" {meant!r} stays allowed; did you mean {meant!r}?"
    )


MAX_NAME_COMPARISONS = 50_000
"""Provided names one check may compare a name or glob with (a catalog and the fixtures may be
large, and a comparison takes up to tens of microseconds): past it, a step's warning has no
suggestion, a glob step is taken as provided, a forbidden entry is not looked at for a typo."""


class _Known:
    """The sources' names, and what was found near each name asked of them: a suite names the
    same tools in many tasks, and a catalog may list many."""

    def __init__(self, sources: ToolSources) -> None:
        self.sources = sources
        self._names = sorted(sources.names)
        self._close: dict[str, list[str]] = {}
        self._typos: dict[str, list[str]] = {}
        self._globs: dict[str, bool] = {}
        self._left = MAX_NAME_COMPARISONS

    def glob_provided(self, pattern: ToolPattern, fixtures: Set[str]) -> bool:
        """Whether a glob matches a provided name (or there is no budget left to tell)."""
        if pattern.text not in self._globs:
            afford = self._afford(len(self._names))
            self._globs[pattern.text] = not afford or any(map(pattern.matches, self._names))
        if self._globs[pattern.text] or not self._afford(len(fixtures)):
            return True
        return any(map(pattern.matches, fixtures))

    def suggestion(self, tool: str, fixtures: Set[str]) -> str:
        """``; did you mean 'x'?`` for the closest provided name, if one is close."""
        if tool not in self._close:
            afford = self._afford(len(self._names))
            self._close[tool] = difflib.get_close_matches(tool, self._names, n=1) if afford else []
        if not self._afford(len(fixtures)):
            return ""
        # the closest of all is the sources' closest or one of the (few) fixtures
        close = difflib.get_close_matches(tool, [*self._close[tool], *sorted(fixtures)], n=1)
        return f"; did you mean {close[0]!r}?" if close else ""

    def typo_of(self, entry: str, fixtures: Set[str]) -> str | None:
        """The closest provided name one edit from ``entry``, if there is one."""
        if entry not in self._typos:
            afford = self._afford(len(self._names))
            self._typos[entry] = [t for t in self._names if one_edit(entry, t)] if afford else []
        if not self._afford(len(fixtures)):
            return None
        near = [*self._typos[entry], *sorted(t for t in fixtures if one_edit(entry, t))]
        close = difflib.get_close_matches(entry, near, n=1, cutoff=0)
        return close[0] if close else None

    def _afford(self, comparisons: int) -> bool:
        """Whether ``comparisons`` more are within :data:`MAX_NAME_COMPARISONS` (and spend
        them)."""
        if comparisons > self._left:
            return False
        self._left -= comparisons
        return True


def one_edit(a: str, b: str) -> bool:
    """Whether ``b`` is ``a`` with one letter added, dropped or changed, or two neighbouring
    letters swapped (the Damerau–Levenshtein distance is 1)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    i = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    if len(a) != len(b):
        longer, shorter = (a, b) if len(a) > len(b) else (b, a)
        return longer[i + 1 :] == shorter[i:]
    swapped = a[i + 1 : i + 2] == b[i : i + 1] and a[i : i + 1] == b[i + 1 : i + 2]
    return a[i + 1 :] == b[i + 1 :] or (swapped and a[i + 2 :] == b[i + 2 :])


def _fixture_tools(task: dict[str, Any]) -> frozenset[str]:
    fixtures = task.get("fixtures")
    responses = fixtures.get("toolResponses") if isinstance(fixtures, dict) else None
    if not isinstance(responses, list):
        return frozenset()
    return frozenset(
        r["tool"] for r in responses if isinstance(r, dict) and isinstance(r.get("tool"), str)
    )


def _either(givers: tuple[str, ...]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return givers[0] if len(givers) == 1 else f"{', '.join(givers[:-1])} or {givers[-1]}"
