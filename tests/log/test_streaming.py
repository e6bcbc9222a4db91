"""Reading a log as a stream: the same verdict as reading it whole, memory bounded by the
trials in flight, and a hostile log's excesses refused where they are met."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_eval import parse_suite
from openwop_eval.base import limits
from openwop_eval.cli.main import main
from openwop_eval.log import EXT, verify_log
from openwop_eval.log import reader as reader_module
from openwop_eval.log.jsonl import OutOfOrderError, iter_jsonl
from openwop_eval.log.reader import LogReader

SUITE = {
    "suiteId": "test.openwop.evals.stream",
    "version": "1.0.0",
    "modes": ["golden"],
    "thresholds": {"passScore": 0.5},
    "trials": {"count": 3, "passRule": "mean"},
    "tasks": [
        {
            "taskId": name,
            "input": {},
            "expected": {
                "kind": "golden",
                "match": {"strategy": "exact", "value": "ok"},
                "trajectory": {"steps": [{"tool": "crm:lookup"}], "forbidden": ["x:delete"]},
            },
        }
        for name in ("a", "b")
    ],
}


def trial(task: str, index: int, tools: list[str], score: float) -> list[dict[str, Any]]:
    """One trial as the runner writes it, without sequence numbers yet."""
    ext = {EXT: {"taskId": task, "trial": index, "invocationId": f"inv-{task}-{index}"}}
    events = [
        {
            "type": "agent.invocation-started",
            "payload": {"invocationId": f"inv-{task}-{index}", **ext},
        }
    ]
    for n, tool in enumerate(tools):
        call = {"callId": f"c{n}", **ext}
        events.append(
            {"type": "agent.tool-called", "payload": {"toolName": tool, "inputs": {}, **call}}
        )
        events.append(
            {"type": "agent.tool-returned", "payload": {"status": "ok", "outcome": 1, **call}}
        )
    passed = score >= 0.5 and tools == ["crm:lookup"]
    scored = {"taskId": task, "score": score, "passed": passed, **ext}
    return [*events, {"type": "eval.scored", "payload": scored}]


def numbered(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**e, "sequence": i, "eventId": f"e{i}"} for i, e in enumerate(events)]


TRIALS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.integers(0, 2),
        st.lists(st.sampled_from(["crm:lookup", "x:delete", "y:other"]), max_size=3),
        st.sampled_from([0.0, 0.25, 0.5, 1.0]),
    ),
    max_size=8,
)


@settings(max_examples=150, deadline=None)
@given(TRIALS, st.randoms(use_true_random=False))
def test_a_stream_reaches_the_whole_reading(trials: list[Any], rng: Any) -> None:
    """Trials interleaved at random (as concurrent trials are), read as a stream in order,
    give the summary and the problems that reading the whole log does."""
    pending = [trial(*t) for t in trials]
    events: list[dict[str, Any]] = [{"type": "eval.started", "payload": {}}]
    while pending:
        source = rng.choice(pending)
        events.append(source.pop(0))
        if not source:
            pending.remove(source)
    docs = numbered(events)
    suite = parse_suite(SUITE).suite
    whole = verify_log(suite, list(reversed(docs)))  # sorted first
    streamed = verify_log(suite, iter(docs), ordered=True)
    assert streamed.summary == whole.summary
    assert streamed.log_problems == whole.log_problems


def test_an_event_of_a_scored_trial_is_a_problem_and_not_counted() -> None:
    events = trial("a", 0, ["crm:lookup"], 1.0)
    late = trial("a", 0, ["x:delete"], 1.0)[1]  # a forbidden call, after the score
    reader = LogReader()
    scored = [reader.feed(doc) for doc in numbered([*events, late])]
    (record,) = [s.record for s in scored if s is not None]
    assert [c.tool for c in record.tool_calls] == ["crm:lookup"]
    assert "which its eval.scored had closed; it is not counted" in reader.problems.listed()[0]


def test_past_the_open_trials_limit_the_oldest_fails_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(reader_module, "MAX_OPEN_TRIALS", 2)
    first, second, third = (trial("a", i, ["crm:lookup"], 1.0) for i in range(3))
    # all three open at once; the first is dropped when the third opens
    events = [first[0], second[0], third[0], *first[1:], *second[1:], *third[1:]]
    reader = LogReader()
    records = [s.record for doc in numbered(events) if (s := reader.feed(doc)) is not None]
    # the first trial's later events reopen nothing it could be graded on: it is not counted
    assert [(r.index, len(r.tool_calls)) for r in records] == [(1, 1), (2, 1)]
    problems = reader.problems.listed()
    assert "invocation 'inv-a-0' is dropped and counts as not run" in problems[0]
    assert all("inv-a-1" not in p for p in problems)


def test_problems_past_the_limit_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader_module, "MAX_LOG_PROBLEMS", 3)
    reader = LogReader()
    bad = {
        "type": "eval.scored",
        "payload": {EXT: {"taskId": "a", "trial": -1, "invocationId": "i"}},
    }
    for doc in numbered([bad] * 10):
        reader.feed(doc)
    assert reader.problems.listed()[-1] == "… and 7 more problems"
    assert len(reader.problems.listed()) == 4


def test_a_file_out_of_order_is_refused_as_a_stream() -> None:
    lines = [json.dumps({"sequence": n}) for n in (0, 2, 1)]
    with pytest.raises(OutOfOrderError, match=r"x\.jsonl:3: sequence 1 follows 2"):
        list(iter_jsonl(lines, "x.jsonl"))
    ties = [json.dumps({"sequence": 0, "n": n}) for n in range(3)]
    assert [d["n"] for d in iter_jsonl(ties)] == [0, 1, 2]  # ties keep the file's order


def test_verify_reads_a_log_out_of_order_whole(tmp_path: Path) -> None:
    docs = numbered([{"type": "eval.started", "payload": {}}, *trial("a", 0, ["crm:lookup"], 1.0)])
    (tmp_path / "suite.json").write_text(json.dumps(SUITE))
    ordered, shuffled = tmp_path / "ordered.jsonl", tmp_path / "shuffled.jsonl"
    ordered.write_text("".join(json.dumps(d) + "\n" for d in docs))
    shuffled.write_text("".join(json.dumps(d) + "\n" for d in reversed(docs)))
    outputs = []
    for log in (ordered, shuffled):
        result = CliRunner().invoke(main, ["verify", str(tmp_path / "suite.json"), str(log)])
        assert result.exit_code == 0, result.output
        outputs.append(json.loads(result.stdout))
    assert outputs[0] == outputs[1]
    assert outputs[0]["tasks"][0]["trials"]["trialStats"]["passed"] == 1


def test_the_limits_are_the_documented_ones() -> None:
    assert (limits.MAX_OPEN_TRIALS, limits.MAX_LOG_PROBLEMS) == (100_000, 1_000)
