"""Exact arithmetic for the gate: rational means, unbiased pass@k / pass^k, nearest-rank p95.

Every recorded number is read as the decimal it was written as — the shortest text that
round-trips the float, ``repr(0.8) == "0.8"`` — and every decision is made on exact rationals
of those decimals: four passing trials of five meet a 0.8 bar, three trials of 0.6 meet a 0.6
bar, and rounding never flips a verdict. Reported values are the exact results rounded once
to the nearest float. Costs are sums of money,
added as the decimals they were reported as, so 0.1 + 0.2 stays within a 0.3 budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache


def decimal(value: float | Fraction) -> Fraction:
    """The exact value of the decimal a float was written as (a Fraction is already exact)."""
    if isinstance(value, Fraction):
        return value
    return _decimal(float(value))


@lru_cache(maxsize=65536)
def _decimal(value: float) -> Fraction:
    # Scores repeat (0.0, 1.0, a few rubric values): parse each decimal once.
    return Fraction(repr(value))


@lru_cache(maxsize=65536)
def decimal_parts(value: float) -> tuple[int, int]:
    """``(p, e)`` with ``p / 10**e`` exactly the decimal ``value`` was written as.

    Integers on a power-of-ten scale add without a gcd per step, which keeps a running
    sum exact and cheap (:class:`DecimalSum`).
    """
    text = repr(float(value))
    if not math.isfinite(value):
        Fraction(text)  # raises the ValueError that decimal() raises for the same value
    digits, _, power = text.partition("e")
    whole, _, tail = digits.partition(".")
    tail = tail.rstrip("0")
    e = len(tail) - int(power or 0)
    p = int(whole + tail)
    return (p * 10**-e, 0) if e < 0 else (p, e)


def at_least(value: float, bar: Fraction) -> bool:
    """``decimal(value) >= bar``, on integers."""
    p, e = decimal_parts(value)
    scale: int = 10**e
    return p * bar.denominator >= bar.numerator * scale


class DecimalSum:
    """An exact running sum of decimals, as an integer numerator over ``10**exponent``."""

    __slots__ = ("count", "exponent", "numerator")

    def __init__(self) -> None:
        self.numerator = 0
        self.exponent = 0
        self.count = 0
        """How many values :meth:`add` added."""

    def add(self, value: float, times: int = 1) -> None:
        p, e = decimal_parts(value)
        self.add_parts(p * times, e)
        self.count += times

    def add_parts(self, p: int, e: int) -> None:
        if e > self.exponent:
            self.numerator *= 10 ** (e - self.exponent)
            self.exponent = e
        elif e < self.exponent:
            p *= 10 ** (self.exponent - e)
        self.numerator += p

    def over(self, divisor: int = 1) -> Fraction:
        """The sum divided by ``divisor``, exactly."""
        return Fraction(self.numerator, 10**self.exponent * divisor)

    def ratio_float(self, divisor: int = 1) -> float:
        """``float(self.over(divisor))`` without building the Fraction (int division is
        correctly rounded, so the float is the same)."""
        scale: int = 10**self.exponent
        return self.numerator / (scale * divisor)


def decimal_sum(values: Sequence[float | Fraction]) -> Fraction:
    """Exact sum of the decimals (money too: 0.1 + 0.2 is exactly 0.3)."""
    return sum((decimal(v) for v in values), Fraction(0))


def exact_mean(values: Sequence[float | Fraction]) -> Fraction:
    if not values:
        raise ValueError("mean of no values")
    return decimal_sum(values) / len(values)


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
    variance = sum(((decimal(v) - mean) ** 2 for v in values), Fraction(0)) / len(values)
    return math.sqrt(variance)


def p95(values: Sequence[Fraction]) -> Fraction:
    """Nearest-rank 95th percentile: the smallest value with at least 95% at or below it."""
    ordered = sorted(values)
    rank = -(-95 * len(ordered) // 100)  # ceil(0.95 n) in integers
    return ordered[rank - 1]


def round_half_up(value: Fraction) -> int:
    return math.floor(value + Fraction(1, 2))
