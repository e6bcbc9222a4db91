"""The paired statistics of a comparison: an exact sign test and a seeded bootstrap.

Both are exact where a decision is made: the sign test's p-value is a ``Fraction`` of
integers, and each bootstrap resample mean is an integer over one common denominator, so
whether an interval lies below 0 never depends on float rounding, and swapping the sides
negates every resample exactly.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from ..core.stats import decimal

MAX_RESAMPLES: Final = 100_000
"""Bootstrap resamples one comparison may ask for."""

MAX_BOOTSTRAP_DRAWS: Final = 20_000_000
"""Paired tasks × resamples: the bootstrap's work (about 2 s on one core at the limit; the
default 2,000 resamples fit 10,000 tasks)."""


def sign_test_p(newly_failing: int, newly_passing: int) -> Fraction:
    """Exact two-sided sign test (McNemar exact) on the discordant pairs b and c:
    ``min(1, 2 · Σ_{i ≤ min(b, c)} C(n, i) / 2^n)`` with n = b + c, and 1 when n = 0."""
    if newly_failing < 0 or newly_passing < 0:
        raise ValueError("the counts of discordant pairs must be ≥ 0")
    n = newly_failing + newly_passing
    if n == 0:
        return Fraction(1)
    term, tail = 1, 0
    for i in range(min(newly_failing, newly_passing) + 1):
        tail += term
        term = term * (n - i) // (i + 1)  # C(n, i + 1), exact: C(n, i)·(n − i) is divisible
    return min(Fraction(1), Fraction(2 * tail, 2**n))


@dataclass(frozen=True)
class Interval:
    """A percentile bootstrap interval of the mean paired delta; ``low`` and ``high`` are
    exact resample means (the k-th smallest and k-th largest)."""

    low: Fraction
    high: Fraction
    confidence: float
    resamples: int
    seed: int

    @property
    def lower(self) -> float:
        return float(self.low)

    @property
    def upper(self) -> float:
        return float(self.high)

    @property
    def below_zero(self) -> bool:
        return self.high < 0

    @property
    def above_zero(self) -> bool:
        return self.low > 0


def check_bootstrap(tasks: int, resamples: int, confidence: float, seed: int = 0) -> None:
    """Refuse work past the documented budget before any of it is done."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError("seed must be an integer")
    if isinstance(resamples, bool) or not isinstance(resamples, int):
        raise ValueError("resamples must be an integer")
    if not 1 <= resamples <= MAX_RESAMPLES:
        raise ValueError(f"resamples must be between 1 and {MAX_RESAMPLES:,}; got {resamples:,}")
    draws = tasks * resamples
    if draws > MAX_BOOTSTRAP_DRAWS:
        raise ValueError(
            f"{tasks:,} paired tasks × {resamples:,} resamples is {draws:,} draws; the limit is"
            f" {MAX_BOOTSTRAP_DRAWS:,} (ask for fewer resamples)"
        )
    if not isinstance(confidence, int | float) or isinstance(confidence, bool):
        raise ValueError("confidence must be a number")
    if not (math.isfinite(confidence) and 0 < confidence < 1):
        raise ValueError(f"confidence must be strictly between 0 and 1; got {confidence!r}")


def bootstrap_interval(
    deltas: Sequence[Fraction], *, seed: int, resamples: int, confidence: float
) -> Interval:
    """Resample the tasks with replacement ``resamples`` times with ``random.Random(seed)``
    and take the k-th smallest and k-th largest resample mean, k = max(1, ⌊R·α/2⌋) with
    α = 1 − confidence. Taking k from both ends keeps the interval symmetric under negation."""
    if not deltas:
        raise ValueError("a bootstrap needs at least one paired delta")
    check_bootstrap(len(deltas), resamples, confidence, seed)
    denominator = math.lcm(*(d.denominator for d in deltas))
    numerators = [d.numerator * (denominator // d.denominator) for d in deltas]
    rng = random.Random(seed)
    n = len(numerators)
    sums = sorted(sum(rng.choices(numerators, k=n)) for _ in range(resamples))
    k = max(1, math.floor(resamples * significance_level(confidence) / 2))
    scale = n * denominator
    return Interval(
        Fraction(sums[k - 1], scale), Fraction(sums[-k], scale), confidence, resamples, seed
    )


def significance_level(confidence: float) -> Fraction:
    """α = 1 − confidence, exactly, on the decimal the confidence was written as."""
    return 1 - decimal(confidence)
