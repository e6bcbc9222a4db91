"""RFC 0246: the worked examples, the presence rules (§D) and the unchanged scores (§C)."""

from __future__ import annotations

from openwop_eval import summary_dict
from tests.helpers import calls, golden, graded, rubric, suite_doc, trial

FORBID = {"forbidden": ["accounts:delete"]}
PATH = {"steps": [{"tool": "crm:lookup"}, {"tool": "pay:refund"}], "forbidden": ["accounts:delete"]}


def test_worked_example_task_mean_rule() -> None:
    """passScore 0.7, count 3, every trial scores 0.9 but calls a forbidden tool."""
    doc = suite_doc(
        rubric("answer", [0.9, 0.1], FORBID),
        pass_score=0.7,
        trials={"count": 3, "passRule": "mean"},
    )
    result = graded(
        doc,
        *(trial("answer", i, "…", calls("accounts:delete"), verdicts=(1.0, 0.0)) for i in range(3)),
    )
    task = summary_dict(result)["tasks"][0]
    assert task["trials"]["meanScore"] == 0.9
    assert task["score"] == 0.9
    assert task["gatedScore"] == 0
    assert task["passed"] is False
    assert [t.score for t in result.tasks[0].trials] == [0.9, 0.9, 0.9]
    assert [t.passed for t in result.tasks[0].trials] == [False, False, False]


def test_worked_example_suite_aggregate() -> None:
    """passScore 0.7, count 1, two tasks scoring 0.9; task 2 takes the wrong path."""
    doc = suite_doc(
        rubric("one", [0.9, 0.1], PATH), rubric("two", [0.9, 0.1], PATH), pass_score=0.7
    )
    result = graded(
        doc,
        trial("one", 0, "…", calls("crm:lookup", "pay:refund"), verdicts=(1.0, 0.0)),
        trial("two", 0, "…", calls("pay:refund"), verdicts=(1.0, 0.0)),
    )
    summary = summary_dict(result)
    assert summary["aggregateScore"] == 0.9
    assert [t["gatedScore"] for t in summary["tasks"]] == [0.9, 0]
    assert summary["gatedAggregateScore"] == 0.45
    assert summary["passed"] is False
    assert summary["passedCount"] == 1


def test_no_trajectory_suite_carries_neither_field() -> None:
    summary = summary_dict(graded(suite_doc(golden("a"), golden("b")), trial("a"), trial("b")))
    assert "gatedAggregateScore" not in summary
    assert all("gatedScore" not in t for t in summary["tasks"])
    assert summary["passed"] is True


def test_matched_trajectory_task_still_carries_gated_score() -> None:
    summary = summary_dict(
        graded(
            suite_doc(golden("a", trajectory=PATH)),
            trial("a", tool_calls=calls("crm:lookup", "pay:refund")),
        )
    )
    assert summary["tasks"][0]["gatedScore"] == summary["tasks"][0]["score"] == 1
    assert summary["gatedAggregateScore"] == 1


def test_gated_aggregate_appears_when_any_task_has_a_trajectory() -> None:
    summary = summary_dict(
        graded(suite_doc(golden("a"), golden("b", trajectory=FORBID)), trial("a"), trial("b"))
    )
    assert "gatedScore" not in summary["tasks"][0]
    assert summary["tasks"][1]["gatedScore"] == 1
    assert summary["gatedAggregateScore"] == 1


def test_trials_block_adds_trial_statistics() -> None:
    doc = suite_doc(golden("a"), trials={"count": 4, "passRule": "all", "k": 2})
    result = graded(doc, trial("a", 0), trial("a", 1), trial("a", 2, output="no"), trial("a", 3))
    entry = summary_dict(result)["tasks"][0]
    assert entry["trials"] == {
        "count": 4,
        "k": 2,
        "meanScore": 0.75,
        "passAtK": 1.0,
        "passHatK": 0.5,
        "trialStats": {"passed": 3, "minScore": 0.0, "maxScore": 1.0, "stdDev": 0.4330127018922193},
    }
    assert entry["passed"] is False


def test_no_trials_block_means_no_trials_entry() -> None:
    summary = summary_dict(graded(suite_doc(golden("a")), trial("a")))
    assert "trials" not in summary["tasks"][0]
