"""Comparing two runs of one suite, task by task, on the RFC 0246 gated values.

Every decision here is on gated scores and task verdicts (``passed`` is already gated): a
candidate whose output scores rise only through wrong-path trials has gained nothing. The
ungated score deltas are carried for information only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Final, Literal, TypeAlias

from ..core.stats import decimal
from .sides import CompareInputError, Side, TaskSide
from .stats import Interval, bootstrap_interval, check_bootstrap, sign_test_p, significance_level

MIN_TASKS: Final = 6
"""Paired tasks below which the verdict is ``inconclusive``: with fewer than 6 discordant
pairs no two-sided exact sign test can reach p < 0.05 (5 of 5 gives p = 0.0625)."""

Verdict: TypeAlias = Literal["improved", "degraded", "inconclusive"]
Bucket: TypeAlias = Literal["newly_failing", "newly_passing", "still_failing", "still_passing"]


@dataclass(frozen=True)
class TaskDelta:
    """One task present on both sides; every delta is candidate − baseline."""

    task_id: str
    baseline: TaskSide
    candidate: TaskSide

    @property
    def bucket(self) -> Bucket:
        before, after = self.baseline.passed, self.candidate.passed
        if before != after:
            return "newly_passing" if after else "newly_failing"
        return "still_passing" if after else "still_failing"

    @property
    def flaky(self) -> bool:
        """A pass rate strictly between 0 and 1 on either side (whatever its bucket)."""
        return self.baseline.flaky or self.candidate.flaky

    @property
    def gated_change(self) -> Fraction:
        """The exact gated delta, on the decimals the scores were written as."""
        return decimal(self.candidate.gated_score) - decimal(self.baseline.gated_score)

    @property
    def gated_delta(self) -> float:
        return float(self.gated_change)

    @property
    def score_delta(self) -> float:
        """The ungated delta: information only, never a decision."""
        return float(decimal(self.candidate.score) - decimal(self.baseline.score))

    @property
    def pass_rate_delta(self) -> float:
        before = Fraction(self.baseline.trials_passed, self.baseline.trials)
        return float(Fraction(self.candidate.trials_passed, self.candidate.trials) - before)


@dataclass(frozen=True)
class SignTest:
    """The exact sign test on task verdicts: b newly failing, c newly passing."""

    newly_failing: int
    newly_passing: int
    p: Fraction
    alpha: Fraction

    @property
    def p_value(self) -> float:
        return float(self.p)

    @property
    def significant(self) -> bool:
        return self.p < self.alpha


@dataclass(frozen=True)
class Comparison:
    """Two sides, their paired tasks (in baseline order), the evidence and the verdict."""

    baseline: Side
    candidate: Side
    tasks: tuple[TaskDelta, ...]
    added: tuple[str, ...]
    """Tasks only the candidate has: listed, excluded from the paired statistics."""
    removed: tuple[str, ...]
    """Tasks only the baseline has: likewise."""
    sign_test: SignTest
    interval: Interval | None
    """The bootstrap interval of the mean paired gated delta; ``None`` with no paired task."""
    confidence: float
    verdict: Verdict
    reasons: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def too_few_tasks(self) -> bool:
        return len(self.tasks) < MIN_TASKS

    def bucket(self, name: Bucket) -> tuple[str, ...]:
        return tuple(t.task_id for t in self.tasks if t.bucket == name)

    @property
    def newly_failing(self) -> tuple[str, ...]:
        return self.bucket("newly_failing")

    @property
    def newly_passing(self) -> tuple[str, ...]:
        return self.bucket("newly_passing")

    @property
    def still_failing(self) -> tuple[str, ...]:
        return self.bucket("still_failing")

    @property
    def still_passing(self) -> tuple[str, ...]:
        return self.bucket("still_passing")

    @property
    def flaky(self) -> tuple[str, ...]:
        return tuple(t.task_id for t in self.tasks if t.flaky)

    @property
    def mean_gated_change(self) -> Fraction | None:
        """The exact mean of the paired gated deltas (what the interval is about)."""
        if not self.tasks:
            return None
        return sum((t.gated_change for t in self.tasks), Fraction(0)) / len(self.tasks)

    @property
    def gated_delta(self) -> float | None:
        change = self.mean_gated_change
        return None if change is None else float(change)

    @property
    def score_delta(self) -> float | None:
        """The mean paired ungated delta: information only."""
        if not self.tasks:
            return None
        changes = [decimal(t.candidate.score) - decimal(t.baseline.score) for t in self.tasks]
        return float(sum(changes, Fraction(0)) / len(changes))


def compare(
    baseline: Side,
    candidate: Side,
    *,
    seed: int = 0,
    resamples: int = 2000,
    confidence: float = 0.95,
) -> Comparison:
    """Pair the tasks of two sides of one suite and decide: ``improved``, ``degraded`` or
    ``inconclusive`` (see docs/compare.md). Deterministic for a given seed."""
    if baseline.suite_id != candidate.suite_id:
        raise CompareInputError(
            f"the sides are runs of different suites: {baseline.suite_id} ({baseline.source})"
            f" and {candidate.suite_id} ({candidate.source})"
        )
    warnings = []
    if baseline.suite_version != candidate.suite_version:
        warnings.append(
            f"the suite versions differ: {baseline.suite_version} (baseline) and"
            f" {candidate.suite_version} (candidate); tasks are paired by id"
        )
    theirs = {t.task_id: t for t in candidate.tasks}
    ours = {t.task_id for t in baseline.tasks}
    paired = tuple(
        TaskDelta(t.task_id, t, theirs[t.task_id]) for t in baseline.tasks if t.task_id in theirs
    )
    try:
        check_bootstrap(len(paired), resamples, confidence, seed)
    except ValueError as exc:
        raise CompareInputError(str(exc)) from None
    failing = sum(t.bucket == "newly_failing" for t in paired)
    passing = sum(t.bucket == "newly_passing" for t in paired)
    sign = SignTest(failing, passing, sign_test_p(failing, passing), significance_level(confidence))
    interval = None
    if paired:
        deltas = [t.gated_change for t in paired]
        interval = bootstrap_interval(deltas, seed=seed, resamples=resamples, confidence=confidence)
    verdict, reasons = _decide(len(paired), sign, interval)
    return Comparison(
        baseline=baseline,
        candidate=candidate,
        tasks=paired,
        added=tuple(t.task_id for t in candidate.tasks if t.task_id not in ours),
        removed=tuple(t.task_id for t in baseline.tasks if t.task_id not in theirs),
        sign_test=sign,
        interval=interval,
        confidence=confidence,
        verdict=verdict,
        reasons=reasons,
        warnings=tuple(warnings),
    )


def _decide(
    paired: int, sign: SignTest, interval: Interval | None
) -> tuple[Verdict, tuple[str, ...]]:
    if paired < MIN_TASKS:
        return "inconclusive", (
            f"too few tasks: {paired} paired, and at least {MIN_TASKS} are needed (below"
            f" {MIN_TASKS} discordant pairs no two-sided exact sign test reaches p < 0.05)",
        )
    down: list[str] = []
    up: list[str] = []
    if interval is not None and interval.below_zero:
        down.append(f"{interval_text(interval)} lies wholly below 0")
    if interval is not None and interval.above_zero:
        up.append(f"{interval_text(interval)} lies wholly above 0")
    if sign.significant:  # p < α < 1 implies b ≠ c
        side = down if sign.newly_failing > sign.newly_passing else up
        side.append(f"{sign_text(sign)} < {float(sign.alpha):g}: significant")
    if down and not up:
        return "degraded", tuple(down)
    if up and not down:
        return "improved", tuple(up)
    if down and up:
        return "inconclusive", tuple(f"conflicting evidence: {r}" for r in (*down, *up))
    spread = f"; {interval_text(interval)} includes 0" if interval is not None else ""
    return "inconclusive", (f"no significant difference: {sign_text(sign)}{spread}",)


def interval_text(interval: Interval) -> str:
    return (
        f"the {percent(interval.confidence)} bootstrap interval of the mean gated delta,"
        f" [{interval.lower:.4g}, {interval.upper:.4g}],"
    )


def sign_text(sign: SignTest) -> str:
    return (
        f"sign test: {sign.newly_failing} newly failing, {sign.newly_passing} newly passing,"
        f" p = {sign.p_value:.4g}"
    )


def delta_text(c: Comparison) -> str | None:
    """The bootstrap evidence in words, for the table and the Markdown alike."""
    interval = c.interval
    if interval is None or c.gated_delta is None:
        return None
    return (
        f"mean gated delta {c.gated_delta:+.4g}, {percent(interval.confidence)} bootstrap"
        f" interval [{interval.lower:.4g}, {interval.upper:.4g}] ({interval.resamples:,}"
        f" resamples, seed {interval.seed})"
    )


def percent(confidence: float) -> str:
    return f"{confidence * 100:.6g}%"


def regression_reasons(comparison: Comparison, tolerance: float | None = None) -> list[str]:
    """Why the candidate regressed; empty when it did not. The one regression rule:

    any newly failing task; or a significant drop of the gated aggregate (the bootstrap
    interval's upper bound < 0); or, with ``tolerance``, a mean paired gated delta below
    −tolerance. It applies whatever the number of tasks.
    """
    limit = _tolerance(tolerance)
    reasons = []
    failing = comparison.newly_failing
    if failing:
        plural = "s" if len(failing) != 1 else ""
        reasons.append(f"{len(failing)} newly failing task{plural}: {', '.join(failing)}")
    interval = comparison.interval
    if interval is not None and interval.below_zero:
        reasons.append(
            f"the gated aggregate dropped significantly: {interval_text(interval)} lies wholly"
            " below 0"
        )
    change = comparison.mean_gated_change
    if limit is not None and change is not None and change < -limit:
        reasons.append(
            f"the mean gated delta {float(change):.4g} is below −{tolerance:g} (the tolerance)"
        )
    return reasons


def _tolerance(tolerance: float | None) -> Fraction | None:
    if tolerance is None:
        return None
    if isinstance(tolerance, bool) or not isinstance(tolerance, int | float):
        raise CompareInputError("the tolerance must be a number")
    if not (math.isfinite(tolerance) and 0 <= tolerance <= 1):
        raise CompareInputError(f"the tolerance must be between 0 and 1; got {tolerance!r}")
    return decimal(tolerance)
