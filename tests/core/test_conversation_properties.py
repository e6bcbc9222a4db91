"""The grading math over conversations, against an independent reading of the RFC 0246 rule:
a conversation's gating score is its output score only when the whole path matched, every
turn's own rule held over that turn's calls, nothing missed, nothing errored, and it did not
run out of turns; otherwise 0. The reported score never depends on the path or the turns."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_eval import parse_suite
from openwop_eval.core import GradingPlan, ToolCall, TrialRecord, grade_suite, plan_suite
from openwop_eval.core.stats import decimal, pass_at_k, pass_hat_k
from tests.core.oracle_trajectory import check_trajectory

TOOLS = ["bookings:get", "flights:search", "bookings:rebook", "payments:charge"]
RULES: list[dict[str, Any]] = [
    {},
    {"trajectory": {"steps": [{"tool": "bookings:get"}]}},
    {"trajectory": {"forbidden": ["bookings:rebook"]}},
    {"trajectory": {"steps": [{"tool": "bookings:rebook"}], "forbidden": ["payments:*"]}},
    {"trajectory": {"maxCalls": 1}},
]


@st.composite
def cases(draw: st.DrawFn) -> tuple[GradingPlan, list[TrialRecord]]:
    max_turns = draw(st.integers(1, 4))
    turns = draw(st.lists(st.sampled_from(RULES), max_size=max_turns))
    expected: dict[str, Any] = {"kind": "golden", "match": {"strategy": "exact", "value": "ok"}}
    if draw(st.booleans()):
        expected["trajectory"] = {"forbidden": ["payments:*"]}
    count = draw(st.integers(1, 5))
    doc = {
        "suiteId": "test.openwop.evals.conversation-math",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": draw(st.sampled_from([0.5, 0.9, 1.0]))},
        "trials": {"count": count, "passRule": draw(st.sampled_from(["mean", "all", "any"]))},
        "tasks": [
            {
                "taskId": "chat",
                "input": "hello",
                "expected": expected,
                "x-openwop-eval": {
                    "conversation": {
                        "maxTurns": max_turns,
                        "user": {"simulator": {"model": "openai:m", "persona": "p", "goal": "g"}},
                        "turns": turns,
                    }
                },
            }
        ],
    }
    plan = plan_suite(parse_suite(doc).suite)
    records = []
    for index in range(count):
        if draw(st.integers(0, 9)) == 0:
            continue  # this conversation did not run
        played = draw(st.integers(1, max_turns))
        calls = [
            ToolCall(tool, {}, missed=draw(st.integers(0, 29)) == 0, turn=turn)
            for turn in range(played)
            for tool in draw(st.lists(st.sampled_from(TOOLS), max_size=3))
        ]
        records.append(
            TrialRecord(
                "chat",
                index,
                draw(st.sampled_from(["ok", "no"])),
                tuple(calls),
                error="boom" if draw(st.integers(0, 14)) == 0 else None,
                turns=played,
                exhausted=played == max_turns and draw(st.booleans()),
                user_simulator=False,
            )
        )
    return plan, records


def _oracle_gating(plan: GradingPlan, record: TrialRecord) -> tuple[float, float, bool]:
    """(score, gating, passed) of one conversation, read from the rule directly."""
    task = plan.tasks[0]
    missed = any(c.missed for c in record.tool_calls)
    if record.error is not None or missed:
        return 0.0, 0.0, False
    score = 1.0 if record.output == "ok" else 0.0
    calls = record.tool_calls
    whole = task.trajectory is None or check_trajectory(task.trajectory, calls).matched
    per_turn = all(
        spec is None or check_trajectory(spec, [c for c in calls if c.turn == t]).matched
        for t, spec in enumerate(task.turns)
    )
    matched = whole and per_turn and not record.exhausted
    passed = matched and decimal(score) >= plan.pass_score
    return score, score if matched else 0.0, passed


@settings(max_examples=400, deadline=None)
@given(case=cases())
def test_conversations_are_graded_by_the_rule(case: tuple[GradingPlan, list[TrialRecord]]) -> None:
    plan, records = case
    task = grade_suite(plan, records).tasks[0]
    by_index = {r.index: _oracle_gating(plan, r) for r in records}
    outcomes = [by_index.get(i, (0.0, 0.0, False)) for i in range(plan.count)]
    assert task.exact_score == sum((decimal(s) for s, _, _ in outcomes), Fraction()) / plan.count
    assert task.exact_gated == sum((decimal(g) for _, g, _ in outcomes), Fraction()) / plan.count
    passed = sum(p for _, _, p in outcomes)
    assert task.passed_trials == passed
    assert task.pass_at_k == pass_at_k(plan.count, passed, plan.k)
    assert task.pass_hat_k == pass_hat_k(plan.count, passed, plan.k)
    for trial in task.trials:
        if trial.outcome == "not-run":
            continue
        score, gating, ok = by_index[trial.index]
        assert (trial.score, trial.gating, trial.passed) == (score, gating, ok)


@settings(max_examples=200, deadline=None)
@given(case=cases(), data=st.data())
def test_a_late_wrong_turn_never_turns_a_fail_into_a_pass(
    case: tuple[GradingPlan, list[TrialRecord]], data: st.DataObject
) -> None:
    plan, records = case
    before = grade_suite(plan, records).tasks[0]
    if not records:
        return
    victim = data.draw(st.sampled_from(records))
    late = ToolCall("payments:charge", {}, turn=(victim.turns or 1) - 1)
    worse = [
        TrialRecord(
            r.task_id,
            r.index,
            r.output,
            (*r.tool_calls, late),
            r.error,
            turns=r.turns,
            exhausted=r.exhausted,
        )
        if r is victim
        else r
        for r in records
    ]
    after = grade_suite(plan, worse).tasks[0]
    assert after.exact_score == before.exact_score  # the reported score is a measurement
    assert after.exact_gated <= before.exact_gated
    assert after.passed_trials <= before.passed_trials
    assert not (after.passed and not before.passed)
