"""A run's fixture source deals each trial a fresh book from its task's ``toolResponses``,
grouped once per run; a source that serves another suite never serves it stale answers."""

from __future__ import annotations

from typing import Any

from openwop_eval import parse_suite
from openwop_eval.core import plan_suite
from openwop_eval.runner.fixtures import FixtureSource


def tasks(responses: list[tuple[str, Any]]) -> Any:
    doc = {
        "suiteId": "test.openwop.evals.fixturesource",
        "version": "1.0.0",
        "modes": ["golden"],
        "tasks": [
            {
                "taskId": "t1",
                "input": {},
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "x"}},
                "fixtures": {"toolResponses": [{"tool": t, "response": r} for t, r in responses]},
            }
        ],
    }
    return plan_suite(parse_suite(doc).suite).tasks


def test_each_trial_gets_every_answer_in_order_whatever_earlier_trials_took() -> None:
    source = FixtureSource()
    (task,) = tasks([("b:two", 1), ("a:one", "x"), ("b:two", 2)])
    first = source.book(task, 0)
    assert first is not None
    assert first.take("b:two", {}) == (True, 1)
    assert first.take("b:two", {}) == (True, 2)
    assert first.take("b:two", {}) == (False, None)
    second = source.book(task, 1)
    assert second is not None
    assert second.tool_names == ("a:one", "b:two")
    assert [second.take("b:two", {}), second.take("a:one", {})] == [(True, 1), (True, "x")]


def test_a_source_shared_by_two_suites_serves_each_its_own_answers() -> None:
    source = FixtureSource()
    (old,) = tasks([("crm:lookup", "old")])
    (new,) = tasks([("crm:lookup", "new"), ("crm:other", 0)])
    assert old.task_id == new.task_id
    for task, answer in [(old, "old"), (new, "new"), (old, "old")]:
        book = source.book(task, 0)
        assert book is not None
        assert book.take("crm:lookup", {}) == (True, answer)
    book = source.book(new, 0)
    assert book is not None
    assert book.tool_names == ("crm:lookup", "crm:other")
