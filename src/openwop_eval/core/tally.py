"""Streaming grading: a run's trials folded one at a time, in any order, in O(tasks) state.

Per task the fold keeps exact running totals only: how often each distinct non-zero score
and gating score occurred (a few entries, flushed into exact decimal sums when they grow),
whence the sums and the sum of squares; the passed and unsafe counts; the sign and first
index of a zero score (for ``min``/``max``, which Python resolves by index among equal
floats); cost and latency sums; the distinct findings; and a bitmap of the indexes seen.
The task decision is made once, from those totals, on the same exact rationals as before:
``mean = Σscore / n`` and ``variance = Σscore²/n − mean²``, which is the rational
``Σ(score − mean)²/n`` is, so the standard deviation is the same float.

:func:`grade_task` and :func:`grade_suite` are this fold over a complete list, so there is
one implementation of the task and suite decision.
"""

from __future__ import annotations

import copy
import math
from fractions import Fraction
from functools import lru_cache
from typing import Final

from . import names as n
from .aggregate import SuiteGrade, decide
from .errors import GradingError
from .grading import FAILURES_KEPT, TaskGrade, TrialGrade, grade_trial, not_run
from .plan import CompiledTask, GradingPlan
from .reasons import Reason
from .records import TrialRecord
from .safety import FindingTag, distinct_tags
from .stats import DecimalSum, decimal_parts, pass_at_k, pass_hat_k, round_half_up

FLUSH_AT: Final = 32
"""Distinct scores a task counts before folding them into its exact sums."""


class TaskTally:
    """One task's running totals; :meth:`finish` decides the task from them."""

    __slots__ = (
        "_claimed",
        "_cost",
        "_extremes",
        "_failed",
        "_findings",
        "_gating",
        "_infrastructure",
        "_latency",
        "_passed",
        "_scores",
        "_seen",
        "_squares",
        "_trials",
        "_unsafe",
        "_user_simulator",
        "_zero",
        "_zero_at",
        "count",
        "gating_sum",
        "plan",
        "score_sum",
        "task",
    )

    def __init__(self, plan: GradingPlan, task: CompiledTask, keep_trials: bool) -> None:
        self.plan = plan
        self.task = task
        self.count = plan.count
        self._seen = bytearray((plan.count + 7) >> 3)
        self._trials: list[TrialGrade | None] | None = [None] * plan.count if keep_trials else None
        self._scores: dict[float, int] = {}
        self._gating: dict[float, int] = {}
        self.score_sum = DecimalSum()
        self._squares = DecimalSum()
        self.gating_sum = DecimalSum()
        self._extremes: tuple[float, float] | None = None
        """min and max of the non-zero scores flushed so far."""
        self._zero, self._zero_at = 0.0, plan.count
        self._passed = 0
        self._unsafe = 0
        self._infrastructure = 0
        self._user_simulator = 0
        self._cost: DecimalSum | None = None
        """The exact sum of the costs reported (made at the first one)."""
        self._latency: DecimalSum | None = None
        self._findings: set[FindingTag] = set()
        self._failed: list[TrialGrade] = []
        """The failed trials of lowest index folded so far, at most ``FAILURES_KEPT``."""
        self._claimed = 0

    def check(self, index: int) -> None:
        """:class:`GradingError` unless ``index`` is in range and not yet folded."""
        if not 0 <= index < self.count:
            raise GradingError(
                f"task {self.task.task_id!r}: trial index {index} is outside 0..{self.count - 1}"
            )
        if self._seen[index >> 3] & (1 << (index & 7)):
            raise GradingError(f"task {self.task.task_id!r}: trial {index} recorded twice")

    def _mark(self, index: int) -> None:
        self._seen[index >> 3] |= 1 << (index & 7)
        self._claimed += 1

    def fold(self, grade: TrialGrade) -> None:
        """Add a grade whose index :meth:`check` passed to the totals."""
        # one unpacking, not a descriptor call per field: this runs per trial
        (
            _,
            index,
            _,
            score,
            gating,
            passed,
            _,
            _,
            _,
            cost,
            latency,
            findings,
            unsafe,
            infra,
            user,
        ) = grade
        self._seen[index >> 3] |= 1 << (index & 7)  # _mark, inline
        self._claimed += 1
        if score:
            scores = self._scores
            scores[score] = scores.get(score, 0) + 1
            if len(scores) > FLUSH_AT:
                self._flush()
        elif index < self._zero_at:
            self._zero, self._zero_at = score, index
        if gating:
            counts = self._gating
            counts[gating] = counts.get(gating, 0) + 1
            if len(counts) > FLUSH_AT:
                self._flush()
        if passed:
            self._passed += 1
        else:
            self._keep_failure(grade, index)
        if unsafe:
            self._unsafe += 1
        if infra:
            self._infrastructure += 1
        if user:
            self._user_simulator += 1
        if findings:
            self._findings.update(findings)
        if cost is not None:
            self._cost = self._cost or DecimalSum()
            self._cost.add(cost)
        if latency is not None:
            self._latency = self._latency or DecimalSum()
            self._latency.add(latency)
        if self._trials is not None:
            self._trials[index] = grade

    def _keep_failure(self, grade: TrialGrade, index: int) -> None:
        failed = self._failed
        if len(failed) == FAILURES_KEPT:
            if index > failed[-1].index:
                return  # folded in any order: the kept ones are the lowest indexes
            failed.pop()
        at = len(failed)
        while at and failed[at - 1].index > index:
            at -= 1
        failed.insert(at, grade)

    def _failures(self) -> tuple[TrialGrade, ...]:
        """The kept failures with the trials not run among the lowest indexes."""
        kept = self._failed
        if self._claimed == self.count:
            return tuple(kept)
        bound = kept[-1].index if len(kept) == FAILURES_KEPT else self.count
        seen, missing = self._seen, []
        for index in range(bound):  # a kept failure's index is below count
            if not seen[index >> 3] & (1 << (index & 7)):
                missing.append(not_run(self.task.task_id, index))
                if len(missing) == FAILURES_KEPT:
                    break
        return tuple(sorted([*kept, *missing], key=lambda t: t.index)[:FAILURES_KEPT])

    def _flush(self) -> None:
        for value, times in self._scores.items():
            p, e = decimal_parts(value)
            self.score_sum.add_parts(p * times, e)
            self._squares.add_parts(p * p * times, 2 * e)
        if self._scores:
            low, high = min(self._scores), max(self._scores)
            if self._extremes is not None:
                low, high = min(self._extremes[0], low), max(self._extremes[1], high)
            self._extremes = low, high
        for value, times in self._gating.items():
            self.gating_sum.add(value, times)
        self._scores.clear()
        self._gating.clear()

    def _first_missing(self) -> int:
        """The lowest index not folded (``count`` when every trial was)."""
        if self._claimed == self.count:
            return self.count
        full = self.count >> 3
        at = next((i for i in range(full) if self._seen[i] != 0xFF), full)
        index = at << 3
        while index < self.count and self._seen[index >> 3] & (1 << (index & 7)):
            index += 1
        return index

    def _min_max(self) -> tuple[float, float]:
        # Equal floats differ only as 0.0 and -0.0: min and max take the first in index
        # order, so a zero is the one of the lowest index (a trial not run scores 0.0).
        missing = self._first_missing()
        zero_at, zero = (missing, 0.0) if missing < self._zero_at else (self._zero_at, self._zero)
        has_zero = zero_at < self.count
        if self._extremes is None:
            return zero, zero  # only zeros: every trial scored 0 or did not run
        low, high = self._extremes
        if has_zero:
            low = low if low < 0 else zero
            high = high if high > 0 else zero
        return low, high

    def finish(self) -> TaskGrade:
        self._flush()
        plan, count, task_id = self.plan, self.count, self.task.task_id
        total, gating = self.score_sum, self.gating_sum
        mean, mean_float = _mean(total.numerator, total.exponent, count)
        if (gating.numerator, gating.exponent) == (total.numerator, total.exponent):
            gated, gated_float = mean, mean_float  # every trial that scored also gated
        else:
            gated, gated_float = _mean(gating.numerator, gating.exponent, count)
        c = self._passed
        reasons: list[Reason] = []
        if self._unsafe:
            reasons.append(
                Reason("safety-finding", f"{self._unsafe} of {count} trials had a blocking finding")
            )
        if plan.pass_rule == n.PASS_RULE_ALL:
            passed = c == count
            if not passed:
                reasons.append(
                    Reason(
                        "not-every-trial-passed", f"{c} of {count} trials passed (passRule: all)"
                    )
                )
        elif plan.pass_rule == n.PASS_RULE_ANY:
            passed = c > 0
            if not passed:
                reasons.append(
                    Reason("no-trial-passed", f"none of {count} trials passed (passRule: any)")
                )
        else:
            bar = plan.pass_score
            scale: int = 10**gating.exponent
            passed = gating.numerator * bar.denominator >= bar.numerator * scale * count
            if not passed:
                reasons.append(
                    Reason(
                        "task-below-bar",
                        f"gated score {gated_float:g} is below passScore {float(bar):g}"
                        + (f" (score {mean_float:g})" if gated != mean else ""),
                    )
                )
        low, high = self._min_max()
        at_k, hat_k = _pass_k(count, c, plan.k)
        latency = None if self._latency is None else self._latency.over(self._latency.count)
        return TaskGrade(
            task_id=task_id,
            has_trajectory=self.task.trajectory is not None,
            trials=self._trial_grades(),
            score=mean_float,
            gated_score=gated_float,
            passed=passed and not self._unsafe,
            passed_trials=c,
            pass_at_k=at_k,
            pass_hat_k=hat_k,
            min_score=low,
            max_score=high,
            std_dev=self._std_dev(),
            cost_usd=None if self._cost is None else self._cost.ratio_float(),
            latency_ms=round_half_up(latency) if latency is not None else None,
            reasons=tuple(reasons),
            exact_score=mean,
            exact_gated=gated,
            exact_latency_ms=latency,
            findings=distinct_tags(list(self._findings)) if self._findings else (),
            failures=self._failures(),
            cost_unknown=self._claimed - (0 if self._cost is None else self._cost.count),
            infrastructure=self._infrastructure,
            user_simulator=self._user_simulator,
        )

    def best_case(self) -> TaskGrade:
        """The task's grade were each trial not folded yet perfect: score and gating 1,
        passed, costing 0, taking 0 ms — the most the trials still to come can give it."""
        missing = self.count - self._claimed
        if not missing:
            return self.finish()
        best = copy.copy(self)
        best._trials, best._claimed, best._passed = None, self.count, self._passed + missing
        best._seen = bytearray(b"\xff" * len(self._seen))
        best._scores, best._gating = dict(self._scores), dict(self._gating)
        best._scores[1.0] = best._scores.get(1.0, 0) + missing
        best._gating[1.0] = best._gating.get(1.0, 0) + missing
        best.score_sum, best.gating_sum = copy.copy(self.score_sum), copy.copy(self.gating_sum)
        best._squares, best._failed = copy.copy(self._squares), list(self._failed)
        best._cost, best._latency = (
            copy.copy(self._cost or DecimalSum()),
            copy.copy(self._latency or DecimalSum()),
        )
        best._cost.add(0.0, missing)
        best._latency.add(0.0, missing)
        return best.finish()

    def _trial_grades(self) -> tuple[TrialGrade, ...]:
        trials, task_id = self._trials, self.task.task_id
        if trials is None:
            return ()
        if self._claimed == self.count:
            return tuple(trials)  # type: ignore[arg-type]  # every index was folded
        return tuple(not_run(task_id, i) if t is None else t for i, t in enumerate(trials))

    def _std_dev(self) -> float:
        total, squares = self.score_sum, self._squares
        return _std_dev(
            total.numerator, total.exponent, squares.numerator, squares.exponent, self.count
        )


@lru_cache(maxsize=4096)
def _mean(numerator: int, exponent: int, count: int) -> tuple[Fraction, float]:
    """``numerator / 10**exponent / count`` exactly and as a float (task means repeat)."""
    scale: int = 10**exponent
    return Fraction(numerator, scale * count), numerator / (scale * count)


@lru_cache(maxsize=4096)
def _std_dev(total: int, s: int, squares: int, q: int, count: int) -> float:
    # Σx²/n − (Σx/n)² over one denominator: n·Q·10^(2s) − S²·10^q over n²·10^(q+2s),
    # a non-negative integer ratio whose division rounds as Fraction.__float__ does.
    numerator = count * squares * 10 ** (2 * s) - total * total * 10**q
    return math.sqrt(numerator / (count * count * 10 ** (q + 2 * s)))


@lru_cache(maxsize=4096)
def _pass_k(count: int, c: int, k: int) -> tuple[float, float]:
    return float(pass_at_k(count, c, k)), float(pass_hat_k(count, c, k))


class SuiteTally:
    """Grades a run's trials one at a time in any order, keeping O(tasks) state.

    ``add`` grades a record and folds it; ``add_grade`` folds a grade computed elsewhere
    (the runner grades off the event loop). Both raise :class:`GradingError` for an unknown
    task, an index outside ``0..count-1`` or a trial added twice, and then fold nothing.
    ``finish`` may be called at any time: trials not added count as not run. With
    ``keep_trials`` each task's ``trials`` is the full index-ordered tuple, else ``()``.
    """

    __slots__ = ("_tasks", "plan")

    def __init__(self, plan: GradingPlan, keep_trials: bool = False) -> None:
        self.plan = plan
        self._tasks = {t.task_id: TaskTally(plan, t, keep_trials) for t in plan.tasks}

    def task(self, task_id: str) -> TaskTally:
        tally = self._tasks.get(task_id)
        if tally is None:
            raise GradingError(f"trial record for unknown task {task_id!r}")
        return tally

    def add(self, record: TrialRecord) -> TrialGrade:
        tally = self._tasks.get(record.task_id) or self.task(record.task_id)
        index = record.index
        if not 0 <= index < tally.count or tally._seen[index >> 3] & (1 << (index & 7)):
            tally.check(index)  # it raises, saying which (inline above: this runs per trial)
        grade = grade_trial(self.plan, tally.task, record)
        tally.fold(grade)
        return grade

    def add_grade(self, grade: TrialGrade) -> None:
        tally = self._tasks.get(grade.task_id) or self.task(grade.task_id)
        tally.check(grade.index)
        tally.fold(grade)

    def finish(self) -> SuiteGrade:
        tallies = list(self._tasks.values())
        tasks = tuple(t.finish() for t in tallies)
        # The suite means over the same integer sums: one Fraction each, not one per task.
        total, gated = DecimalSum(), DecimalSum()
        for t in tallies:
            total.add_parts(t.score_sum.numerator, t.score_sum.exponent)
            gated.add_parts(t.gating_sum.numerator, t.gating_sum.exponent)
        divisor = self.plan.count * len(tasks)
        return decide(self.plan, tasks, total.over(divisor), gated.over(divisor))
