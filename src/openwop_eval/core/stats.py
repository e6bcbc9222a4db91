"""Exact arithmetic for the gate: rational means, unbiased pass@k / pass^k, nearest-rank p95.

Every score decision compares the exact rational value of the recorded floats with the bar
(``Fraction(0.6) * 3 / 3 == Fraction(0.6)``), so rounding never flips a verdict. Reported
values are the exact results rounded once to the nearest float. Costs are sums of money,
added as the decimals they were reported as, so 0.1 + 0.2 stays within a 0.3 budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction


def decimal_sum(values: Sequence[float]) -> Fraction:
    """Sum of the decimals the floats were written as (money: 0.1 + 0.2 is exactly 0.3)."""
    return sum((Fraction(repr(float(v))) for v in values), Fraction(0))


def exact_mean(values: Sequence[float]) -> Fraction:
    if not values:
        raise ValueError("mean of no values")
    return sum((Fraction(v) for v in values), Fraction(0)) / len(values)


def pass_at_k(n: int, c: int, k: int) -> Fraction:
    """Probability that at least one of k trials drawn from n (c passing) passes."""
    _check(n, c, k)
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def pass_hat_k(n: int, c: int, k: int) -> Fraction:
    """Probability that all k trials drawn from n (c passing) pass."""
    _check(n, c, k)
    return Fraction(math.comb(c, k), math.comb(n, k))


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")


def std_dev(values: Sequence[float]) -> float:
    """Population standard deviation (over the trials run, not an estimate of a larger set)."""
    mean = exact_mean(values)
    variance = sum(((Fraction(v) - mean) ** 2 for v in values), Fraction(0)) / len(values)
    return math.sqrt(variance)


def p95(values: Sequence[float]) -> float:
    """Nearest-rank 95th percentile: the smallest value with at least 95% at or below it."""
    ordered = sorted(values)
    rank = -(-95 * len(ordered) // 100)  # ceil(0.95 n) in integers
    return ordered[rank - 1]


def round_half_up(value: Fraction) -> int:
    return math.floor(value + Fraction(1, 2))
