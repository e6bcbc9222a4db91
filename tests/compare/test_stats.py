"""The exact sign test against known binomial values, and the bootstrap's properties."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openwop_eval.compare import MAX_BOOTSTRAP_DRAWS, MAX_RESAMPLES, sign_test_p
from openwop_eval.compare.stats import bootstrap_interval, check_bootstrap


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (0, 0, Fraction(1)),  # no discordant pair: no evidence
        (0, 1, Fraction(1)),  # 2 · 1/2
        (0, 5, Fraction(1, 16)),  # 2 · 1/32 = 0.0625: 5 of 5 is not significant at 0.05
        (0, 6, Fraction(1, 32)),  # 2 · 1/64 = 0.03125: 6 of 6 is the first that is
        (6, 0, Fraction(1, 32)),
        (1, 9, Fraction(22, 1024)),  # 2 · (1 + 10) / 2^10
        (2, 8, Fraction(112, 1024)),  # 2 · (1 + 10 + 45) / 2^10
        (5, 5, Fraction(1)),  # 2 · 638/1024 > 1, capped
        (3, 4, Fraction(1)),
        (10, 30, Fraction(2 * sum(math.comb(40, i) for i in range(11)), 2**40)),  # ≈ 0.00222
    ],
)
def test_known_binomial_values(b: int, c: int, p: Fraction) -> None:
    assert sign_test_p(b, c) == p


def test_below_six_discordant_pairs_nothing_is_significant_at_five_percent() -> None:
    assert min(sign_test_p(0, n) for n in range(6)) > Fraction(1, 20)
    assert sign_test_p(0, 6) < Fraction(1, 20)


def test_negative_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="≥ 0"):
        sign_test_p(-1, 2)


_count = st.integers(0, 200)


@given(_count, _count)
def test_p_is_in_the_unit_interval_and_symmetric(b: int, c: int) -> None:
    p = sign_test_p(b, c)
    assert 0 < p <= 1
    assert p == sign_test_p(c, b)


@given(_count, _count)
def test_p_is_the_probability_of_a_split_at_least_as_uneven(b: int, c: int) -> None:
    n = b + c
    uneven = sum(math.comb(n, x) for x in range(n + 1) if abs(2 * x - n) >= abs(b - c))
    assert sign_test_p(b, c) == Fraction(uneven, 2**n)


@given(st.integers(0, 100), st.integers(0, 100))
def test_one_more_discordant_pair_on_the_heavier_side_never_raises_p(b: int, extra: int) -> None:
    c = b + extra
    assert sign_test_p(b, c + 1) <= sign_test_p(b, c)


# --- the bootstrap ----------------------------------------------------------------------

_delta = st.fractions(min_value=-1, max_value=1, max_denominator=100)
_deltas = st.lists(_delta, min_size=1, max_size=30)
_seed = st.integers(-(2**64), 2**64)


def _interval(deltas: list[Fraction], seed: int = 0, resamples: int = 100) -> tuple[Fraction, ...]:
    got = bootstrap_interval(deltas, seed=seed, resamples=resamples, confidence=0.95)
    return got.low, got.high


@given(_deltas, _seed)
def test_the_interval_is_ordered_and_within_the_observed_deltas(
    deltas: list[Fraction], seed: int
) -> None:
    low, high = _interval(deltas, seed)
    assert min(deltas) <= low <= high <= max(deltas)


@given(_delta, st.integers(1, 30), _seed)
def test_equal_deltas_give_a_point_interval(delta: Fraction, n: int, seed: int) -> None:
    assert _interval([delta] * n, seed) == (delta, delta)


@given(_deltas, _seed)
def test_the_same_seed_gives_the_same_interval(deltas: list[Fraction], seed: int) -> None:
    assert _interval(deltas, seed) == _interval(list(deltas), seed)


@given(_deltas, _seed)
def test_negating_the_deltas_negates_the_interval_exactly(
    deltas: list[Fraction], seed: int
) -> None:
    low, high = _interval(deltas, seed)
    assert _interval([-d for d in deltas], seed) == (-high, -low)


@given(_deltas, st.integers(1, 400))
def test_a_wider_confidence_never_narrows_the_interval(deltas: list[Fraction], r: int) -> None:
    narrow = bootstrap_interval(deltas, seed=1, resamples=r, confidence=0.5)
    wide = bootstrap_interval(deltas, seed=1, resamples=r, confidence=0.99)
    assert wide.low <= narrow.low <= narrow.high <= wide.high


def test_the_bounds_are_the_kth_resample_means_from_each_end() -> None:
    # 2,000 resamples at 95%: k = 50; a side that is 0 half the time is never 0 at k = 50
    got = bootstrap_interval(
        [Fraction(0), Fraction(-1)] * 4, seed=0, resamples=2000, confidence=0.95
    )
    assert Fraction(-1) < got.low < got.high < 0
    assert got.below_zero
    assert not got.above_zero
    assert (got.lower, got.upper) == (float(got.low), float(got.high))


@given(_seed)
def test_resample_means_are_exact_rationals_of_the_decimals(seed: int) -> None:
    # in floats 0.1 + 0.2 - 0.3 is 5.6e-17; exactly, every resample mean is a multiple of 1/30
    deltas = [Fraction(repr(x)) for x in (0.1, 0.2, -0.3)]
    got = bootstrap_interval(deltas, seed=seed, resamples=50, confidence=0.95)
    assert (got.low * 30).denominator == (got.high * 30).denominator == 1


@pytest.mark.parametrize(
    ("tasks", "resamples", "confidence", "message"),
    [
        (10, 0, 0.95, "resamples must be between 1 and 100,000; got 0"),
        (10, MAX_RESAMPLES + 1, 0.95, "resamples must be between 1 and 100,000"),
        (MAX_BOOTSTRAP_DRAWS // 2000 + 1, 2000, 0.95, "draws; the limit is 20,000,000"),
        (10, 2000, 1.0, "confidence must be strictly between 0 and 1"),
        (10, 2000, 0.0, "confidence must be strictly between 0 and 1"),
        (10, 2000, float("nan"), "confidence must be strictly between 0 and 1"),
    ],
)
def test_work_past_the_budget_is_refused_before_it_starts(
    tasks: int, resamples: int, confidence: float, message: str
) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        check_bootstrap(tasks, resamples, confidence)


def test_the_default_resamples_fit_the_largest_side() -> None:
    check_bootstrap(10_000, 2000, 0.95)  # the task limit at the default: allowed
