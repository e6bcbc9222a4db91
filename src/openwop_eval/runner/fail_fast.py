"""Stop a run once its verdict is decided (``--fail-fast``).

The run is decided when no outcome of the trials still to come can open its gate: every
task's best case — its trials not folded yet all perfect (:meth:`TaskTally.best_case`) —
still leaves the RFC rule or the gate policy unmet (:func:`still_possible`). That is exact,
no statistics: a run that can still pass runs every trial. The check is made on the
committer's thread as trials are folded, at most once per ``max(1, tasks // 8)`` folds (each
check is O(tasks)), so a passing run pays a small constant per trial.
"""

from __future__ import annotations

from ..core import GradingPlan, SuiteTally, TaskGrade, TrialGrade
from ..core.gate import still_possible

CHECKS_PER_PASS = 8
"""A check at most every ``tasks / CHECKS_PER_PASS`` folded trials."""


class FailFast:
    """Folds trials into the run's tally and says when the run can no longer pass."""

    def __init__(self, tally: SuiteTally, plan: GradingPlan) -> None:
        self._tally, self._plan = tally, plan
        self._best: dict[str, TaskGrade] = {}
        self._dirty = {task.task_id for task in plan.tasks}
        self._every = max(1, len(plan.tasks) // CHECKS_PER_PASS)
        self._since = self._every - 1  # the first fold checks: a resumed run may be decided
        self.decided = False

    def fold(self, grade: TrialGrade) -> None:
        """Fold ``grade`` (on the committer's thread) and check, now and then."""
        self._tally.add_grade(grade)
        if self.decided:
            return
        self._dirty.add(grade.task_id)
        self._since += 1
        if self._since >= self._every:
            self._since = 0
            self.decided = not self._possible()

    def _possible(self) -> bool:
        for task_id in self._dirty:
            self._best[task_id] = self._tally.task(task_id).best_case()
        self._dirty.clear()
        return still_possible(self._plan, [self._best[t.task_id] for t in self._plan.tasks])
