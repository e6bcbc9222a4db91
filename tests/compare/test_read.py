"""Reading a side: the RFC 0246 presence rules, pass rates, and a located error for every
kind of hostile input — never a traceback, never a silent default."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openwop_eval.base import limits
from openwop_eval.compare import MAX_SIDE_TASKS, CompareInputError, TaskSide, read_side
from tests.compare.builders import SUITE_ID, summary, task


def test_absent_gated_values_equal_the_ungated_ones() -> None:
    doc = summary(task("a", 0.5, passed=False))
    assert "gatedAggregateScore" not in doc
    got = read_side(doc, "base.json")
    assert got.gated_aggregate_score == got.aggregate_score == 0.5
    assert got.tasks == (TaskSide("a", 0.5, 0.5, False, 1, 0),)
    assert (got.source, got.suite_id, got.suite_version) == ("base.json", SUITE_ID, "1.0.0")


def test_gated_values_are_read_when_present() -> None:
    got = read_side(summary(task("a", 1.0, gated=0.0)), "s")
    assert (got.tasks[0].score, got.tasks[0].gated_score, got.tasks[0].passed) == (1, 0, False)
    assert (got.aggregate_score, got.gated_aggregate_score) == (1.0, 0.0)


def test_the_pass_rate_is_the_trial_stats_share_else_the_verdict() -> None:
    got = read_side(summary(task("a", 0.5, trials=(4, 1)), task("b"), task("c", 0.0)), "s")
    assert [(t.trials, t.trials_passed, t.pass_rate) for t in got.tasks] == [
        (4, 1, 0.25),
        (1, 1, 1.0),
        (1, 0, 0.0),
    ]
    assert [t.flaky for t in got.tasks] == [True, False, False]


def test_our_json_report_is_read_through_its_summary() -> None:
    report = {"reportVersion": 1, "runId": "local/1", "passed": True, "summary": summary(task("a"))}
    assert read_side(report, "r.json") == read_side(report["summary"], "r.json")


def test_members_this_reader_does_not_use_are_ignored() -> None:
    doc = summary(task("a"))
    doc["x-other-host"] = {"anything": [1, 2]}
    doc["tasks"][0]["safetyFindings"] = [{"kind": "pii", "severity": "low"}]
    assert read_side(doc, "s").tasks[0].task_id == "a"


def _with(change: Any) -> dict[str, Any]:
    doc = summary(task("a"), task("b", 0.5, trials=(2, 1)))
    change(doc)
    return doc


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def change(doc: dict[str, Any]) -> None:
        target: Any = doc
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return change


def _delete(path: tuple[Any, ...]) -> Any:
    def change(doc: dict[str, Any]) -> None:
        target: Any = doc
        for part in path[:-1]:
            target = target[part]
        del target[path[-1]]

    return change


HOSTILE = [
    ([], "$: expected an EvalSummary (an object); got an array"),
    ({1: 2}, "$: expected an EvalSummary: an object whose keys are strings"),
    (_with(_delete(("suiteId",))), "$: missing the member 'suiteId'"),
    (_with(_set(("suiteId",), 7)), "$.suiteId: expected a string; got the number 7"),
    (_with(_set(("suiteId",), "no spaces allowed")), "$.suiteId: expected an id matching"),
    (_with(_set(("suiteId",), "a" * 5000)), "got a string that is too long"),
    (_with(_set(("suiteVersion",), "1.0")), "$.suiteVersion: expected an id matching"),
    (
        _with(_set(("aggregateScore",), float("nan"))),
        "$.aggregateScore: expected a number in [0, 1]; got NaN",
    ),
    (
        _with(_set(("aggregateScore",), True)),
        "$.aggregateScore: expected a number in [0, 1]; got a boolean",
    ),
    (_with(_set(("aggregateScore",), "0.5")), "got a string"),
    (
        _with(_set(("gatedAggregateScore",), -0.1)),
        "$.gatedAggregateScore: expected a number in [0, 1]; got -0.1",
    ),
    (
        _with(_set(("gatedAggregateScore",), None)),
        "$.gatedAggregateScore: expected a number in [0, 1]; got null",
    ),
    (_with(_set(("passed",), "yes")), "$.passed: expected true or false; got a string"),
    (_with(_set(("tasks",), {"a": 1})), "$.tasks: expected an array of tasks; got an object"),
    (
        _with(_set(("tasks", 0), "a")),
        "$.tasks[0]: expected a task summary (an object); got a string",
    ),
    (
        _with(_set(("tasks", 1, "taskId"), "a")),
        "$.tasks[1].taskId: duplicate task id 'a' (also at [0])",
    ),
    (
        _with(_set(("tasks", 0, "taskId"), "Bad\x1b[2J")),
        "$.tasks[0].taskId: expected an id matching",
    ),
    (_with(_delete(("tasks", 0, "score"))), "$.tasks[0]: missing the member 'score'"),
    (
        _with(_set(("tasks", 0, "score"), float("inf"))),
        "$.tasks[0].score: expected a number in [0, 1]; got Infinity",
    ),
    (
        _with(_set(("tasks", 0, "score"), 1.5)),
        "$.tasks[0].score: expected a number in [0, 1]; got 1.5",
    ),
    (
        _with(_set(("tasks", 0, "gatedScore"), [1])),
        "$.tasks[0].gatedScore: expected a number in [0, 1]; got an array",
    ),
    (
        _with(_set(("tasks", 0, "passed"), 1)),
        "$.tasks[0].passed: expected true or false; got the number 1",
    ),
    (
        _with(_set(("tasks", 1, "trials"), [])),
        "$.tasks[1].trials: expected a trials block (an object); got an array",
    ),
    (
        _with(_set(("tasks", 1, "trials", "count"), 0)),
        "$.tasks[1].trials.count: expected an integer ≥ 1; got 0",
    ),
    (
        _with(_set(("tasks", 1, "trials", "count"), 2.0)),
        "$.tasks[1].trials.count: expected an integer ≥ 1; got the number 2.0",
    ),
    (
        _with(_delete(("tasks", 1, "trials", "trialStats"))),
        "$.tasks[1].trials: missing the member 'trialStats'",
    ),
    (
        _with(_set(("tasks", 1, "trials", "trialStats", "passed"), 3)),
        "$.tasks[1].trials.trialStats.passed: expected an integer in [0, 2]; got 3",
    ),
    (
        _with(_set(("tasks", 1, "trials", "trialStats", "passed"), -1)),
        "expected an integer in [0, 2]; got -1",
    ),
    (
        {"reportVersion": 1, "summary": _with(_set(("tasks", 0, "score"), -1))},
        "$.summary.tasks[0].score: expected a number in [0, 1]; got -1",
    ),
    (
        {"reportVersion": 1, "summary": "x"},
        "$.summary: expected an EvalSummary (an object); got a string",
    ),
    ({"reportVersion": 1, "runId": "local/1"}, "$: missing the member 'summary'"),
    (
        {"reportVersion": 2, "summary": summary(task("a"))},
        "$.reportVersion: reportVersion 2 is newer than 1, the newest this version reads",
    ),
    (
        {"reportVersion": 10**400, "summary": summary(task("a"))},
        "$.reportVersion: reportVersion a very large number is newer than 1",
    ),
    *(
        ({"reportVersion": bad, "summary": "x"}, "$.reportVersion: reportVersion must be a version")
        for bad in (0, -1, True, None, 1.5, 1.0, "1", [1], {"v": 1})
    ),
]


@pytest.mark.parametrize(("doc", "message"), HOSTILE)
def test_hostile_input_is_a_located_error(doc: Any, message: str) -> None:
    with pytest.raises(CompareInputError) as caught:
        read_side(doc, "base.json")
    assert str(caught.value).startswith("base.json $")
    assert str(caught.value).isprintable()  # a control sequence from the input is escaped
    assert message in str(caught.value)
    assert caught.value.source == "base.json"
    assert str(caught.value) == f"base.json {caught.value.path}: {caught.value.message}"


def test_a_side_past_the_task_limit_is_refused_before_its_tasks_are_read() -> None:
    assert MAX_SIDE_TASKS == limits.MAX_TASKS
    doc = summary(task("a"))
    doc["tasks"] = [None] * (MAX_SIDE_TASKS + 1)  # no task is read: the count is refused first
    with pytest.raises(CompareInputError, match=r"\$\.tasks: 10,001 tasks; the limit is 10,000"):
        read_side(doc, "big.json")


@pytest.mark.parametrize(
    "value", [10**400, 10**5000, -(10**5000), 2**53], ids=["1e400", "1e5000", "-1e5000", "2^53"]
)
@pytest.mark.parametrize("member", ["score", "count"])
def test_an_integer_too_large_for_a_float_is_a_located_error(value: int, member: str) -> None:
    doc = summary(task("a", trials=(2, 1)))
    target = doc["tasks"][0] if member == "score" else doc["tasks"][0]["trials"]
    target[member] = value
    with pytest.raises(CompareInputError, match=rf"\$\.tasks\[0\]\S*\.{member}: expected"):
        read_side(doc, "s")


def test_the_error_never_quotes_a_long_value() -> None:
    doc = summary(task("a"))
    doc["tasks"][0]["score"] = 10.0**300
    with pytest.raises(CompareInputError) as caught:
        read_side(doc, "s")
    assert len(str(caught.value)) < 120


_json = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
_MEMBERS = ["suiteId", "suiteVersion", "aggregateScore", "gatedAggregateScore", "passed", "tasks"]
_TASK_MEMBERS = ["taskId", "score", "gatedScore", "passed", "trials"]


@given(_json)
def test_any_json_value_is_a_side_or_a_located_error(value: Any) -> None:
    try:
        read_side(value, "x")
    except CompareInputError as exc:
        message = str(exc)
    else:
        return
    assert message.startswith("x $")


@given(st.sampled_from(_MEMBERS), st.sampled_from(_TASK_MEMBERS), _json, st.booleans())
def test_a_valid_summary_with_one_member_replaced_is_a_side_or_a_located_error(
    member: str, task_member: str, value: Any, in_task: bool
) -> None:
    doc = copy.deepcopy(summary(task("a"), task("b", 0.5, gated=0.0, trials=(2, 1))))
    if in_task:
        doc["tasks"][1][task_member] = value
    else:
        doc[member] = value
    try:
        got = read_side(doc, "x")
    except CompareInputError as exc:
        message = str(exc)
    else:  # whatever was accepted is in range
        json.dumps([got.aggregate_score, got.gated_aggregate_score], allow_nan=False)
        assert all(0 <= t.gated_score <= 1 and 0 <= t.pass_rate <= 1 for t in got.tasks)
        return
    assert message.startswith("x $")
