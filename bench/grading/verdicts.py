"""Expected verdicts, written by hand from the project's semantics (PRODUCT.md, "Semantics").

Nothing here calls the grader: the benchmark checks the grader against these.

Every corpus trial that answers gives the golden output (output score 1), so its verdict is
"the trajectory matched, it did not fail closed and it did not error". A trial's gating
score is 1 when that verdict passes, else 0; so a task's gated score is c/n for c passing
trials out of n, whatever its outputs scored.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

CLEAN = "clean"
REORDER = "reorder"
MISSING_STEP = "missing-step"
DUPLICATE = "duplicate-step"
EXTRA_ALLOWED = "extra-allowed-tool"
EXTRA_FORBIDDEN = "extra-forbidden-tool"
WRONG_VALUE = "wrong-arg-value"
EXTRA_KEY = "extra-arg-key"
NUMERIC_INSIDE = "numeric-inside-range"
NUMERIC_OUTSIDE = "numeric-outside-range"
FIXTURE_MISS = "fixture-miss"
AGENT_ERROR = "agent-error"

DEFECTS = (
    CLEAN,
    REORDER,
    MISSING_STEP,
    DUPLICATE,
    EXTRA_ALLOWED,
    EXTRA_FORBIDDEN,
    WRONG_VALUE,
    EXTRA_KEY,
    NUMERIC_INSIDE,
    NUMERIC_OUTSIDE,
    FIXTURE_MISS,
    AGENT_ERROR,
)
CLOSED = (FIXTURE_MISS, AGENT_ERROR)
"""Failures outside the trajectory: a trajectory matcher alone cannot see them."""

PASS_RULES = ("mean", "all", "any")


def expected_trial_pass(defect: str, order: str, args_match: str) -> bool:
    """The verdict of a trial carrying ``defect`` on a task with this configuration."""
    if defect in (CLEAN, NUMERIC_INSIDE):
        return True
    if defect == REORDER:
        # Two adjacent distinct steps swapped: only any-order accepts it.
        return order == "any-order"
    if defect in (DUPLICATE, EXTRA_ALLOWED):
        # One more call, not forbidden: in-order and any-order allow calls between/around
        # the steps; exact wants exactly the steps.
        return order != "exact"
    if defect == EXTRA_KEY:
        return args_match == "subset"
    # Missing step, forbidden call, wrong value, amount out of range: no configuration
    # accepts them. A fixture miss fails closed and an error fails, whatever the path.
    return False


def expected_outcome(defect: str, passed: bool) -> str:
    if defect == AGENT_ERROR:
        return "errored"
    if defect == FIXTURE_MISS:
        return "failed-closed"
    return "passed" if passed else "failed"


def amount_in_range(cents: int, low: int, high: int, inclusive: bool) -> bool:
    return low <= cents <= high if inclusive else low < cents < high


def bar(pass_score: float) -> Fraction:
    """``passScore`` as the decimal the suite author wrote: 4 of 5 trials meet a 0.8 bar.

    (The binary float nearest 0.8 is slightly above 4/5; comparing with it would fail a
    task whose reported score is 0.8.)
    """
    return Fraction(repr(float(pass_score)))


def task_passes(rule: str, passes: int, n: int, pass_score: float) -> bool:
    """A task's ``passed`` under ``rule`` when ``passes`` of its ``n`` trials passed."""
    if rule == "all":
        return passes == n
    if rule == "any":
        return passes > 0
    return Fraction(passes, n) >= bar(pass_score)


def pass_at_k(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def pass_hat_k(n: int, c: int, k: int) -> Fraction:
    return Fraction(math.comb(c, k), math.comb(n, k))


@dataclass(frozen=True)
class TaskExpectation:
    passes: int
    n: int
    mean_score: Fraction
    gated_score: Fraction
    pass_at_k: Fraction
    pass_hat_k: Fraction
    passed: dict[str, bool]


def expected_task(
    verdicts: Sequence[bool], scores: Sequence[float], pass_score: float, k: int
) -> TaskExpectation:
    n, c = len(verdicts), sum(verdicts)
    return TaskExpectation(
        passes=c,
        n=n,
        mean_score=sum((Fraction(s) for s in scores), Fraction(0)) / n,
        gated_score=Fraction(c, n),
        pass_at_k=pass_at_k(n, c, k),
        pass_hat_k=pass_hat_k(n, c, k),
        passed={rule: task_passes(rule, c, n, pass_score) for rule in PASS_RULES},
    )


@dataclass(frozen=True)
class SuiteExpectation:
    aggregate: Fraction
    gated_aggregate: Fraction
    passed: bool


def expected_suite(tasks: Sequence[TaskExpectation], pass_score: float) -> SuiteExpectation:
    # No cost or latency bar in the corpus suites: the gated aggregate alone decides.
    aggregate = sum((t.mean_score for t in tasks), Fraction(0)) / len(tasks)
    gated = sum((t.gated_score for t in tasks), Fraction(0)) / len(tasks)
    return SuiteExpectation(aggregate, gated, gated >= bar(pass_score))
