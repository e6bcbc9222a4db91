"""The gate: the RFC's ``passed`` and a suite's gate policy. Each policy passes and fails; a
quarantine holds until its date and then gates again; an unknown cost does not pass; and no
policy ever turns an RFC fail into a pass."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_eval import parse_suite
from openwop_eval.core import SuiteError, TrialRecord, grade
from openwop_eval.core.gate import gate_verdict, open_gate, pass_hat_k, pass_rate_bound
from openwop_eval.core.gate_policy import GatePolicy, LowerBound
from openwop_eval.core.plan import RunTerms, plan_suite
from tests.gate.booking import FAILED, TASKS, suite
from tests.helpers import calls

DAY = "2026-12-05"


def records(failed: dict[str, int], cost: float | None = 0.01) -> list[TrialRecord]:
    """Three trials a task, the first ``failed[task]`` of them overcharging."""
    return [
        TrialRecord(
            task,
            i,
            "done",
            calls(("payments:charge", {"amountUsd": 420 if i < failed.get(task, 0) else 120})),
            cost_usd=cost,
        )
        for task in TASKS
        for i in range(3)
    ]


def decided(gate: dict[str, Any] | None, failed: dict[str, int], **terms: Any) -> Any:
    loaded = parse_suite(suite(gate)).suite
    cost = terms.pop("cost", 0.01)
    plan = plan_suite(loaded, RunTerms(day=terms.pop("day", DAY), **terms))
    return open_gate(grade(plan, records(failed, cost)))


ONE_TASK_FAILS = {FAILED: 1}  # gated 0.667 < 0.8: the task fails; the suite 0.917 passes


def test_without_a_policy_the_gate_is_the_rfc_and_names_the_failed_task() -> None:
    gate = decided(None, ONE_TASK_FAILS)
    assert (gate.passed, gate.rfc_passed, gate.reasons) == (True, True, ())
    assert gate.failed_tasks == (FAILED,)


@pytest.mark.parametrize(
    ("gate", "failed", "passed", "rule"),
    [
        ({"requireAllTasks": True}, {}, True, None),
        ({"requireAllTasks": True}, ONE_TASK_FAILS, False, "policy-require-all-tasks"),
        ({"groups": [{"tag": "payments", "requireAll": True}]}, {}, True, None),
        (
            {"groups": [{"tag": "payments", "requireAll": True}]},
            ONE_TASK_FAILS,
            False,
            "policy-group-require-all",
        ),
        ({"groups": [{"tag": "payments", "passScore": 0.6}]}, ONE_TASK_FAILS, True, None),
        (
            {"groups": [{"tag": "payments", "passScore": 0.7}]},
            ONE_TASK_FAILS,
            False,
            "policy-group-below-bar",
        ),
        ({"reliability": {"passHatK": 1}}, {}, True, None),
        ({"reliability": {"passHatK": 0.5}}, ONE_TASK_FAILS, False, "policy-pass-hat-k"),
        (
            {"reliability": {"lowerBound": {"method": "wilson", "atLeast": 0.5}}},
            {},
            True,
            None,
        ),
        (
            {"reliability": {"lowerBound": {"method": "wilson", "atLeast": 0.5}}},
            ONE_TASK_FAILS,
            False,
            "policy-lower-bound",
        ),
        (
            {"reliability": {"lowerBound": {"method": "exact", "atLeast": 0.5}}},
            {},
            False,
            "policy-too-few-trials",
        ),
    ],
)
def test_each_policy_passes_and_fails(
    gate: dict[str, Any], failed: dict[str, int], passed: bool, rule: str | None
) -> None:
    verdict = decided(gate, failed)
    assert verdict.rfc_passed
    assert verdict.passed is passed
    assert [r.rule for r in verdict.reasons] == ([] if rule is None else [rule])


def test_the_command_line_adds_to_the_suites_policy() -> None:
    assert not decided(None, ONE_TASK_FAILS, require_all_tasks=True).passed
    assert decided({"unknownCost": "fail"}, {}, unknown_cost="zero", cost=None).passed


QUARANTINE = {
    "requireAllTasks": True,
    "quarantine": [{"taskId": FAILED, "until": "2026-12-31", "reason": "flaky fare API"}],
}


def test_a_quarantined_task_does_not_gate_until_its_date_then_gates_again() -> None:
    held = decided(QUARANTINE, ONE_TASK_FAILS, day="2026-12-31")
    assert (held.passed, held.quarantined, held.expired) == (True, (FAILED,), ())
    ended = decided(QUARANTINE, ONE_TASK_FAILS, day="2027-01-01")
    assert (ended.passed, ended.quarantined, ended.expired) == (False, (), (FAILED,))
    assert [r.rule for r in ended.reasons] == ["policy-require-all-tasks"]
    undated = decided(QUARANTINE, ONE_TASK_FAILS, day=None)  # no day: no quarantine holds
    assert not undated.passed


def test_a_quarantine_never_opens_what_the_rfc_shut() -> None:
    everything = {FAILED: 3, "change-seat": 3}
    gate = {"quarantine": [{"taskId": t, "until": "2099-01-01", "reason": "r"} for t in TASKS]}
    verdict = decided(gate, everything)
    assert (verdict.rfc_passed, verdict.passed) == (False, False)


def test_an_unknown_cost_does_not_pass_unless_the_suite_says_it_is_zero() -> None:
    unknown = decided(None, {}, cost=None)
    assert unknown.rfc_passed
    assert not unknown.passed
    assert [r.rule for r in unknown.reasons] == ["cost-unknown"]
    assert "12 trial(s) reported no cost" in unknown.reasons[0].message
    assert decided({"unknownCost": "zero"}, {}, cost=None).passed
    loaded = parse_suite({**suite(), "thresholds": {"passScore": 0.8}}).suite  # no cap
    assert open_gate(grade(plan_suite(loaded), records({}, None))).passed


def test_a_trial_that_did_not_run_costs_nothing() -> None:
    loaded = parse_suite(suite()).suite
    ran = [r for r in records({}) if r.index < 2]  # every task's third trial is missing
    verdict = open_gate(grade(plan_suite(loaded, RunTerms(day=DAY)), ran))
    assert verdict.reasons == ()
    assert sum(t.cost_unknown for t in grade(loaded, ran).tasks) == 0


@pytest.mark.parametrize(
    ("gate", "where", "says"),
    [
        (
            {"quarantine": [{"taskId": "gone", "until": "2027-01-01", "reason": "r"}]},
            "x-openwop-eval.gate.quarantine[0].taskId",
            "no task 'gone'",
        ),
        (
            {"groups": [{"tag": "nobody", "requireAll": True}]},
            "x-openwop-eval.gate.groups[0].tag",
            "no task of the suite is tagged 'nobody'",
        ),
        (
            {"quarantine": [{"taskId": FAILED, "until": "2027-02-30", "reason": "r"}]},
            "x-openwop-eval.gate.quarantine[0].until",
            "is not a date",
        ),
        ({"groups": [{"tag": "payments"}]}, "x-openwop-eval.gate.groups[0]", "passScore or"),
        ({"requireAllTask": True}, "x-openwop-eval.gate.requireAllTask", ""),
    ],
)
def test_a_policy_that_names_nothing_or_says_nothing_is_a_located_problem(
    gate: dict[str, Any], where: str, says: str
) -> None:
    with pytest.raises(SuiteError) as caught:
        parse_suite(suite(gate))
    found = [p for p in caught.value.problems if p.path.startswith(f"$.{where}")]
    assert found, caught.value.problems
    assert says in found[0].message


@pytest.mark.parametrize(
    ("passed", "count", "method", "low"),
    [
        (10, 10, "wilson", 0.7871),  # n / (n + z²), z = 1.6449 at 0.95
        (8, 10, "wilson", 0.5408),
        (10, 10, "exact", 0.7411),  # 0.05 ** (1/10)
        (8, 10, "exact", 0.4931),  # the lower end of the two-sided 90% Clopper–Pearson
        (0, 10, "exact", 0.0),
        (3, 3, "exact", 0.3684),
    ],
)
def test_lower_bounds_are_the_known_values(
    passed: int, count: int, method: str, low: float
) -> None:
    bound = LowerBound.model_validate({"method": method, "atLeast": 0.5})
    assert pass_rate_bound(passed, count, bound) == pytest.approx(low, abs=1e-4)


def test_pass_hat_k_is_exact() -> None:
    assert pass_hat_k(2, 3, 2) * 3 == 1  # C(2,2)/C(3,2) = 1/3


POLICIES = st.fixed_dictionaries(
    {},
    optional={
        "requireAllTasks": st.booleans(),
        "groups": st.just([{"tag": "payments", "requireAll": True, "passScore": 0.5}]),
        "reliability": st.sampled_from(
            [
                {"passHatK": 0.3},
                {"lowerBound": {"method": "wilson", "atLeast": 0.2, "confidence": 0.8}},
                {"lowerBound": {"method": "exact", "atLeast": 0.1}},
            ]
        ),
        "unknownCost": st.sampled_from(["fail", "zero"]),
        "quarantine": st.lists(
            st.sampled_from(TASKS).map(
                lambda t: {"taskId": t, "until": "2026-12-31", "reason": "r"}
            ),
            max_size=4,
            unique_by=lambda q: q["taskId"],
        ),
    },
)


@settings(max_examples=200, deadline=None)
@given(
    policy=POLICIES,
    failed=st.dictionaries(st.sampled_from(TASKS), st.integers(0, 3)),
    cost=st.sampled_from([0.01, None, 3.0]),
    day=st.sampled_from([None, "2026-01-01", "2027-01-01"]),
)
def test_a_policy_never_turns_an_rfc_fail_into_a_pass(
    policy: dict[str, Any], failed: dict[str, int], cost: float | None, day: str | None
) -> None:
    loaded = parse_suite(suite(policy)).suite
    graded = grade(loaded, records(failed, cost))
    verdict = gate_verdict(graded, GatePolicy.model_validate(policy), day)
    assert verdict.rfc_passed is graded.passed
    assert verdict.passed <= graded.passed  # an RFC fail is never a pass
    assert verdict.passed is (graded.passed and not verdict.reasons)
    if not verdict.reasons:
        loose = gate_verdict(graded, GatePolicy(unknownCost="zero"), day)
        assert loose.passed is graded.passed
