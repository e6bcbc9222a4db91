"""A decided run, as the runner returns it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ..core import OpenwopEvalError, SuiteGrade
from ..core.gate import GateVerdict, open_gate
from ..core.names import ERROR_INFRASTRUCTURE

Diagnostics: TypeAlias = dict[tuple[str, int], dict[str, Any]]
"""Per (task, trial): what people read of a trial that its log leaves out (output, error)."""


class RunError(OpenwopEvalError):
    """A run cannot start or resume (unknown run, finished run, missing judge…)."""


@dataclass
class RunResult:
    """A decided run. ``outline`` is its grade per task (no trials: it is kept in memory
    whatever the run's size — unless the run kept its trials, ``RunOptions.keep_trials``);
    ``grade`` and ``diagnostics``, trial by trial, are read back the first time they are
    asked for: the grades the run kept, else graded once from its log in the store."""

    run_id: str
    outline: SuiteGrade
    summary: dict[str, Any]
    _detail: Callable[[], tuple[SuiteGrade, Diagnostics]] = field(repr=False)
    budget_exhausted: bool = False
    resumed_trials: int = 0
    agent_id: str = ""
    skipped: int = 0
    """Trials not played because the run could no longer pass (``fail_fast``)."""
    _loaded: tuple[SuiteGrade, Diagnostics] | None = field(default=None, repr=False)

    @property
    def gate(self) -> GateVerdict:
        """The gate: the RFC's ``passed`` and the run's gate policy, on its outline."""
        return open_gate(self.outline)

    @property
    def grade(self) -> SuiteGrade:
        return self._details()[0]

    @property
    def diagnostics(self) -> Diagnostics:
        return self._details()[1]

    def unreachable(self) -> dict[str, int]:
        """What the trials that errored on infrastructure could not reach, and how many
        trials each cost (read from the diagnostics only when there are such trials)."""
        if not any(t.infrastructure for t in self.outline.tasks):
            return {}
        counts: dict[str, int] = {}
        for detail in self.diagnostics.values():
            if detail.get("errorKind") == ERROR_INFRASTRUCTURE:
                endpoint = str(detail.get("endpoint") or "an endpoint")
                counts[endpoint] = counts.get(endpoint, 0) + 1
        return counts

    def _details(self) -> tuple[SuiteGrade, Diagnostics]:
        if self._loaded is None:
            self._loaded = self._detail()
        return self._loaded

    def __repr__(self) -> str:
        # Short whatever the suite's size. ``asyncio.run`` formats its finished task, result
        # included, as it restores the interrupt handler (Python 3.11 builds that text in
        # full before cutting it): the generated repr walked the suite and every grade, 1.7 s
        # a call for 10,000 tasks, twice at the end of every run.
        verdict = "passed" if self.outline.passed else "not passed"
        tasks = len(self.outline.tasks)
        return f"<RunResult {self.run_id} {verdict}, {tasks} tasks>"
