"""Pairing, buckets, the verdict and the regression rule, on handcrafted summaries."""

from __future__ import annotations

from fractions import Fraction

import pytest

from openwop_eval.compare import (
    MIN_TASKS,
    CompareInputError,
    compare,
    comparison_dict,
    regression_reasons,
)
from tests.compare.builders import side, summary, task, verdicts

P, F = True, False


def test_tasks_are_paired_by_id_and_the_others_listed_but_not_paired() -> None:
    base = side(summary(task("a"), task("b"), task("gone")))
    cand = side(summary(task("new"), task("b", 0.0), task("a")))
    c = compare(base, cand)
    assert [t.task_id for t in c.tasks] == ["a", "b"]  # in baseline order
    assert (c.added, c.removed) == (("new",), ("gone",))
    assert c.newly_failing == ("b",)
    assert c.sign_test.newly_failing == 1  # only paired tasks count


def test_every_paired_task_has_one_bucket_and_flaky_is_besides() -> None:
    base = side(
        summary(
            task("pp"),
            task("pf"),
            task("fp", 0.0),
            task("ff", 0.0),
            task("flaky", 0.5, passed=True, trials=(2, 1)),
        )
    )
    cand = side(
        summary(
            task("pp"),
            task("pf", 0.0),
            task("fp"),
            task("ff", 0.0),
            task("flaky", 1.0, trials=(2, 2)),
        )
    )
    c = compare(base, cand)
    assert c.still_passing == ("pp", "flaky")
    assert c.newly_failing == ("pf",)
    assert c.newly_passing == ("fp",)
    assert c.still_failing == ("ff",)
    assert c.flaky == ("flaky",)  # flaky in the baseline only is enough


def test_per_task_deltas_are_candidate_minus_baseline() -> None:
    base = side(summary(task("a", 0.8, gated=0.4, trials=(5, 2))))
    cand = side(summary(task("a", 0.6, gated=0.6, trials=(5, 3))))
    (t,) = compare(base, cand).tasks
    assert (t.gated_delta, t.score_delta, t.pass_rate_delta) == (0.2, -0.2, 0.2)
    assert t.gated_change == Fraction(1, 5)  # exactly, on the decimals as written


def test_identical_sides_are_inconclusive_with_no_regression() -> None:
    doc = verdicts(P, P, F, P, F, P, P, P)
    c = compare(side(doc, "base"), side(doc, "cand"))
    assert c.verdict == "inconclusive"
    assert c.reasons[0].startswith("no significant difference")
    assert (c.sign_test.p, c.gated_delta) == (1, 0.0)
    assert c.interval is not None
    assert (c.interval.low, c.interval.high) == (0, 0)
    assert regression_reasons(c) == [] == regression_reasons(c, tolerance=0.0)


def test_six_newly_failing_of_six_is_degraded() -> None:
    c = compare(side(verdicts(*[P] * 6)), side(verdicts(*[F] * 6)))
    assert c.verdict == "degraded"
    assert not c.too_few_tasks
    assert any("p = 0.03125 < 0.05: significant" in r for r in c.reasons)


def test_six_newly_passing_of_six_is_improved() -> None:
    c = compare(side(verdicts(*[F] * 6)), side(verdicts(*[P] * 6)))
    assert c.verdict == "improved"
    assert any("lies wholly above 0" in r for r in c.reasons)


def test_below_the_floor_the_verdict_is_inconclusive_but_regressions_still_count() -> None:
    c = compare(side(verdicts(*[P] * 5)), side(verdicts(*[F] * 5)))
    assert MIN_TASKS == 6
    assert c.too_few_tasks
    assert c.verdict == "inconclusive"
    assert c.reasons == (
        "too few tasks: 5 paired, and at least 6 are needed (below 6 discordant pairs no"
        " two-sided exact sign test reaches p < 0.05)",
    )
    assert regression_reasons(c)[0] == "5 newly failing tasks: t0, t1, t2, t3, t4"


def test_no_paired_task_at_all_has_no_interval() -> None:
    c = compare(side(verdicts(P, prefix="a")), side(verdicts(P, prefix="b")))
    assert (c.tasks, c.interval, c.gated_delta, c.verdict) == ((), None, None, "inconclusive")
    assert "interval" not in comparison_dict(c)
    assert regression_reasons(c, tolerance=0.0) == []


def test_conflicting_evidence_is_inconclusive() -> None:
    # more tasks newly fail (sign test: degraded) while the gated scores rise on average
    base = summary(
        *[task(f"t{i}", 0.99, passed=True) for i in range(8)],
        *[task(f"u{i}", 0.0) for i in range(12)],
    )
    cand = summary(
        *[task(f"t{i}", 0.98, passed=False) for i in range(8)],
        *[task(f"u{i}", 0.9, passed=False) for i in range(12)],
    )
    c = compare(side(base), side(cand))
    assert c.sign_test.significant
    assert c.sign_test.newly_failing == 8
    assert c.interval is not None
    assert c.interval.above_zero
    assert c.verdict == "inconclusive"
    assert all(r.startswith("conflicting evidence") for r in c.reasons)
    assert len(c.reasons) == 2


def test_the_regression_rule_names_newly_failing_tasks() -> None:
    base = verdicts(P, P, P, P, P, P, P, P)
    cand = verdicts(P, P, F, P, P, P, P, P)
    c = compare(side(base), side(cand))
    assert c.verdict == "inconclusive"  # one task is no statistical evidence …
    assert regression_reasons(c) == ["1 newly failing task: t2"]  # … but it is a regression


def test_a_significant_gated_drop_without_a_verdict_change_is_a_regression() -> None:
    base = summary(*[task(f"t{i}", 0.9, passed=False) for i in range(8)])
    cand = summary(*[task(f"t{i}", 0.5, passed=False) for i in range(8)])
    c = compare(side(base), side(cand))
    assert c.newly_failing == ()
    assert c.verdict == "degraded"
    (reason,) = regression_reasons(c)
    assert reason.startswith("the gated aggregate dropped significantly")


def test_the_tolerance_catches_a_small_drop_the_interval_does_not() -> None:
    base = summary(*[task(f"t{i}", 0.5, passed=False) for i in range(8)])
    cand = summary(
        task("t0", 0.0, passed=False), *[task(f"t{i}", 0.5, passed=False) for i in range(1, 8)]
    )
    c = compare(side(base), side(cand))
    assert regression_reasons(c) == []  # 1 of 8 tasks: the interval reaches 0
    assert regression_reasons(c, tolerance=0.1) == []  # a drop of 0.0625 is within 0.1
    assert regression_reasons(c, tolerance=0.0625) == []  # exactly at the tolerance: allowed
    assert regression_reasons(c, tolerance=0.05) == [
        "the mean gated delta -0.0625 is below −0.05 (the tolerance)"
    ]


@pytest.mark.parametrize("tolerance", [-0.1, 1.5, float("nan"), float("inf")])
def test_a_tolerance_outside_the_unit_interval_is_refused(tolerance: float) -> None:
    c = compare(side(verdicts(P)), side(verdicts(P)))
    with pytest.raises(CompareInputError, match="the tolerance must be between 0 and 1"):
        regression_reasons(c, tolerance)


def test_gated_not_ungated_scores_decide() -> None:
    # the candidate's output scores rise to 1 on every task, all through wrong-path trials
    base = summary(*[task(f"t{i}", 0.5, gated=0.5, passed=False) for i in range(8)])
    cand = summary(*[task(f"t{i}", 1.0, gated=0.0) for i in range(8)])
    c = compare(side(base), side(cand))
    assert c.score_delta == 0.5
    assert c.gated_delta == -0.5
    assert c.verdict == "degraded"


def test_sides_of_different_suites_cannot_be_compared() -> None:
    other = verdicts(P)
    other["suiteId"] = "test.openwop.evals.other"
    with pytest.raises(CompareInputError, match=r"different suites: test\.openwop\.evals\.compare"):
        compare(side(verdicts(P), "a.json"), side(other, "b.json"))


def test_a_different_suite_version_is_compared_with_a_warning() -> None:
    c = compare(side(verdicts(P)), side(summary(task("t0"), version="1.1.0")))
    assert c.warnings == (
        "the suite versions differ: 1.0.0 (baseline) and 1.1.0 (candidate); tasks are paired by id",
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"resamples": 0}, "resamples must be between 1 and 100,000"),
        ({"resamples": 100_001}, "resamples must be between 1 and 100,000"),
        ({"confidence": 1.0}, "confidence must be strictly between 0 and 1"),
        ({"seed": 1.5}, "seed must be an integer"),
    ],
)
def test_bad_options_are_refused(options: dict[str, float], message: str) -> None:
    with pytest.raises(CompareInputError, match=message):
        compare(side(verdicts(P)), side(verdicts(P)), **options)  # type: ignore[arg-type]


def test_the_confidence_sets_the_significance_level() -> None:
    # 5 of 5 newly failing plus one unchanged: p = 0.0625, significant at 90 % but not 95 %
    base, cand = verdicts(P, P, P, P, P, P), verdicts(F, F, F, F, F, P)
    strict = compare(side(base), side(cand), confidence=0.95)
    loose = compare(side(base), side(cand), confidence=0.9)
    assert (strict.sign_test.significant, loose.sign_test.significant) == (False, True)
    assert loose.sign_test.alpha == Fraction(1, 10)
