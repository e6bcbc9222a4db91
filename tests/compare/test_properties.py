"""Properties of a comparison that hold for every pair of sides."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from openwop_eval.compare import (
    Comparison,
    Side,
    compare,
    comparison_dict,
    comparison_markdown,
    regression_reasons,
)
from tests.compare.builders import side, summary, task

_score = st.sampled_from([0.0, 0.25, 0.5, 1.0]) | st.floats(0, 1)
_seed = st.integers(0, 2**32)
FLIP = {"improved": "degraded", "degraded": "improved", "inconclusive": "inconclusive"}


@st.composite
def _task(draw: st.DrawFn, task_id: str) -> dict[str, Any]:
    score = draw(_score)
    count = draw(st.integers(1, 4))
    return task(
        task_id,
        score,
        passed=draw(st.booleans()),
        gated=draw(st.sampled_from([score, 0.0]) | st.floats(0, score)),
        trials=(count, draw(st.integers(0, count))),
    )


@st.composite
def _sides(draw: st.DrawFn) -> tuple[Side, Side]:
    ids = draw(st.lists(st.sampled_from([f"t{i}" for i in range(14)]), unique=True, max_size=14))
    shared = draw(st.integers(0, len(ids)))
    base = [draw(_task(i)) for i in ids[:shared]] + [draw(_task(i)) for i in ids[shared:][::2]]
    cand = [draw(_task(i)) for i in ids[:shared]] + [draw(_task(i)) for i in ids[shared:][1::2]]
    return side(summary(*base), "base"), side(summary(*cand), "cand")


def _compare(base: Side, cand: Side, seed: int = 0) -> Comparison:
    return compare(base, cand, seed=seed, resamples=100)


@given(_sides(), _seed)
def test_swapping_the_sides_flips_the_verdict_and_mirrors_the_evidence(
    sides: tuple[Side, Side], seed: int
) -> None:
    forward, backward = _compare(*sides, seed), _compare(*sides[::-1], seed)
    assert backward.verdict == FLIP[forward.verdict]
    assert backward.too_few_tasks == forward.too_few_tasks
    assert (backward.newly_failing, backward.newly_passing) == (
        forward.newly_passing,
        forward.newly_failing,
    )
    assert backward.sign_test.p == forward.sign_test.p
    assert (backward.added, backward.removed) == (forward.removed, forward.added)
    if forward.interval is None:
        assert backward.interval is None
    else:
        assert backward.interval is not None
        assert (backward.interval.low, backward.interval.high) == (
            -forward.interval.high,
            -forward.interval.low,
        )


@given(_sides(), _seed)
def test_a_comparison_is_deterministic_for_a_seed(sides: tuple[Side, Side], seed: int) -> None:
    assert _compare(*sides, seed) == _compare(*sides, seed)


@given(_sides())
def test_the_outputs_are_strict_json_and_every_verdict_has_a_reason(
    sides: tuple[Side, Side],
) -> None:
    c = _compare(*sides)
    assert 0 < c.sign_test.p <= 1
    assert c.reasons
    json.dumps(comparison_dict(c, tolerance=0.1), allow_nan=False)
    assert comparison_markdown(c).startswith(f"### Comparison `{c.baseline.suite_id}`")


@st.composite
def _wrong_path_candidate(draw: st.DrawFn) -> tuple[Side, Side]:
    """A baseline, and a candidate whose output scores may rise anywhere but whose gated
    scores never do and which passes no task the baseline failed: wrong-path gains only."""
    n = draw(st.integers(0, 14))
    base, cand = [], []
    for i in range(n):
        before = draw(_task(f"t{i}"))
        score = draw(st.floats(before["score"], 1))
        gated = draw(st.floats(0, before.get("gatedScore", before["score"])))
        passed = before["passed"] and draw(st.booleans())
        base.append(before)
        cand.append(task(f"t{i}", score, passed=passed, gated=min(gated, score)))
    return side(summary(*base)), side(summary(*cand))


@given(_wrong_path_candidate(), _seed)
def test_gains_through_wrong_paths_alone_are_never_an_improvement(
    sides: tuple[Side, Side], seed: int
) -> None:
    c = _compare(*sides, seed)
    assert c.verdict != "improved"
    assert c.newly_passing == ()


@given(_wrong_path_candidate(), _seed)
def test_a_candidate_no_worse_on_any_task_never_regresses(
    sides: tuple[Side, Side], seed: int
) -> None:
    worse, better = sides[1], sides[0]  # swapped: no gated score falls, no task newly fails
    c = _compare(worse, better, seed)
    assert c.verdict != "degraded"
    assert regression_reasons(c) == []
