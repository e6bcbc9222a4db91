"""Exact statistics: pass@k and pass^k against brute force, means, p95."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

from openwop_eval.core.stats import decimal, exact_mean, p95, pass_at_k, pass_hat_k, std_dev


def brute(n: int, c: int, k: int) -> tuple[Fraction, Fraction]:
    """Enumerate every k-subset of n trials, the first c of which passed."""
    subsets = list(itertools.combinations(range(n), k))
    some = sum(any(i < c for i in s) for s in subsets)
    every = sum(all(i < c for i in s) for s in subsets)
    return Fraction(some, len(subsets)), Fraction(every, len(subsets))


@pytest.mark.parametrize("n", range(1, 8))
def test_pass_at_k_and_pass_hat_k_match_enumeration(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert (pass_at_k(n, c, k), pass_hat_k(n, c, k)) == brute(n, c, k)


def test_k_equal_n_means_any_and_all() -> None:
    assert pass_at_k(5, 1, 5) == 1
    assert pass_hat_k(5, 4, 5) == 0
    assert pass_hat_k(5, 5, 5) == 1


def test_impossible_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="k <= n"):
        pass_at_k(2, 1, 3)


def test_three_trials_of_point_six_meet_a_point_six_bar_exactly() -> None:
    assert exact_mean([0.6, 0.6, 0.6]) == Fraction(3, 5)


def test_four_of_five_meet_a_point_eight_bar() -> None:
    """The float nearest 0.8 is above 4/5; the bar is the decimal the author wrote."""
    assert Fraction(0.8) > Fraction(4, 5)
    assert exact_mean([1.0, 1.0, 1.0, 1.0, 0.0]) >= decimal(0.8)
    assert exact_mean([1.0, 0.6]) == decimal(0.8)


def test_exact_means_do_not_drift_where_float_sums_do() -> None:
    assert sum([0.1] * 10) / 10 < 0.1  # what naive floats would have decided
    assert exact_mean([0.1] * 10) == Fraction(1, 10)


def test_p95_is_nearest_rank() -> None:
    assert p95([5.0]) == 5.0
    assert p95([float(i) for i in range(1, 21)]) == 19.0
    assert p95([float(i) for i in range(1, 101)]) == 95.0
    assert p95([1.0, 100.0]) == 100.0


def test_std_dev_is_the_population_deviation() -> None:
    assert std_dev([1.0, 1.0, 1.0]) == 0.0
    assert std_dev([0.0, 1.0]) == 0.5
