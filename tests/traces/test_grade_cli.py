"""``openwop-eval grade``: which trial a trace is, what is missing, and the outputs of ``run``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .conftest import Invoke
from .scenario import SUITE, TRIALS, write_suite
from .test_chat import chat_messages


def record(task: str, trial: int, **extra: Any) -> dict[str, Any]:
    body = chat_messages(task, TRIALS[task][trial])
    return {"taskId": task, "trial": trial, "messages": body, "latencyMs": 1, **extra}


def write_lines(path: Path, *records: dict[str, Any]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def all_records() -> list[dict[str, Any]]:
    return [record(task, i) for task, trials in TRIALS.items() for i in range(len(trials))]


def trials_of(report: dict[str, Any], task: str) -> list[dict[str, Any]]:
    return next(t["trials"] for t in report["tasks"] if t["taskId"] == task)


def test_a_trial_without_a_trace_errors_and_fails_and_is_named_up_front(
    cli: Invoke, suite_path: Path, tmp_path: Path
) -> None:
    traces = write_lines(tmp_path / "t.jsonl", record("refund", 0), record("status", 0))
    graded = cli("grade", str(suite_path), traces)
    assert graded.exit_code == 1
    assert "2 trial(s) have no trace and count as failed: refund #1, status #1" in graded.stderr
    missing = trials_of(graded.report, "refund")[1]
    assert (missing["outcome"], missing["score"], missing["passed"]) == ("errored", 0.0, False)
    assert missing["error"] == (
        "MissingTraceError: no trace for this trial (task 'refund', trial 1)"
    )
    assert cli("verify", str(suite_path), str(graded.events)).exit_code == 0


def test_each_trial_is_served_its_own_recorded_results_whatever_trials_are_missing(
    cli: Invoke, tmp_path: Path
) -> None:
    suite = write_suite(tmp_path, SUITE | {"trials": {"count": 3}})
    wrong = record("status", 1) | {"trial": 0}  # no calls
    good = record("status", 0) | {"trial": 2}  # the lookup; trial 1 has no trace
    graded = cli("grade", str(suite), write_lines(tmp_path / "t.jsonl", wrong, good))
    third = trials_of(graded.report, "status")[2]
    assert third["outcome"] == "passed", third
    assert [c["result"] for c in third["calls"]] == [{"status": "shipped"}]


def test_every_output_of_run_is_written(cli: Invoke, suite_path: Path, tmp_path: Path) -> None:
    traces = write_lines(tmp_path / "t.jsonl", *all_records())
    junit, markdown = tmp_path / "junit.xml", tmp_path / "eval.md"
    graded = cli(
        "grade", str(suite_path), traces, "--junit", str(junit), "--markdown", str(markdown)
    )
    assert graded.exit_code == 1
    assert graded.summary["suiteId"] == SUITE["suiteId"]
    assert graded.report["agentId"] == "openwop-eval.traces"
    assert "<testsuites" in junit.read_text()
    assert "NOT PASSED" in graded.stdout
    assert markdown.read_text()


def test_a_passing_suite_exits_0(cli: Invoke, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, SUITE | {"thresholds": {"passScore": 0.5}})
    graded = cli("grade", str(suite), write_lines(tmp_path / "t.jsonl", *all_records()))
    assert graded.exit_code == 0, graded.stdout


def test_traces_may_be_spread_over_several_files(
    cli: Invoke, suite_path: Path, tmp_path: Path
) -> None:
    first, *rest = all_records()
    graded = cli(
        "grade",
        str(suite_path),
        write_lines(tmp_path / "a.jsonl", first),
        write_lines(tmp_path / "b.jsonl", *rest),
    )
    assert graded.exit_code == 1
    assert "no trace" not in graded.stderr


def test_a_trial_recorded_twice_is_a_problem_and_nothing_is_graded(
    cli: Invoke, suite_path: Path, tmp_path: Path
) -> None:
    path = tmp_path / "t.jsonl"
    graded = cli(
        "grade", str(suite_path), write_lines(path, record("refund", 0), record("refund", 0))
    )
    assert graded.exit_code == 2
    assert (
        f"{path}:2: a second trace for task 'refund' trial 0 (the first: {path}:1)" in graded.stderr
    )
    assert "nothing was graded" in graded.stderr
    assert graded.summary is None
    assert not graded.events.exists()


def test_a_task_the_suite_lacks_or_a_trial_past_its_count_is_a_problem(
    cli: Invoke, suite_path: Path, tmp_path: Path
) -> None:
    path = tmp_path / "t.jsonl"
    stray = record("refund", 0) | {"taskId": "nope"}
    late = record("refund", 0) | {"trial": 2}
    graded = cli("grade", str(suite_path), write_lines(path, stray, late))
    assert graded.exit_code == 2
    assert f"{path}:1: task 'nope' is not in the suite" in graded.stderr
    assert (
        f"{path}:2: trial 2 of task 'refund' is past the suite's 2 trial(s) (trials count from 0)"
        in graded.stderr
    )


def test_the_map_names_the_trial_of_traces_that_do_not_and_renames_their_tools(
    cli: Invoke, suite_path: Path, tmp_path: Path
) -> None:
    conversation = tmp_path / "conversation.json"
    messages = chat_messages("status", TRIALS["status"][0])
    messages[1]["tool_calls"][0]["function"]["name"] = "crm__lookup"  # as a model spells it
    conversation.write_text(json.dumps(messages))
    mapping = tmp_path / "map.yaml"
    mapping.write_text(
        "traces:\n  conversation.json: {taskId: status, trial: 0}\n"
        "tools:\n  crm__lookup: crm_lookup\n"
    )
    graded = cli("grade", str(suite_path), str(conversation), "--map", str(mapping))
    first = trials_of(graded.report, "status")[0]
    assert first["outcome"] == "passed", first
    assert [c["tool"] for c in first["calls"]] == ["crm_lookup"]


def test_a_map_entry_wins_over_what_the_trace_says(
    cli: Invoke, suite_path: Path, tmp_path: Path
) -> None:
    traces = write_lines(tmp_path / "t.jsonl", record("status", 1, id="r1"))
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({"traces": {"r1": {"taskId": "status", "trial": 0}}}))
    graded = cli("grade", str(suite_path), traces, "--map", str(mapping))
    assert trials_of(graded.report, "status")[0]["output"] == "I do not know"


def test_a_map_that_cannot_be_read_is_a_located_problem(
    cli: Invoke, suite_path: Path, tmp_path: Path
) -> None:
    mapping = tmp_path / "map.json"
    mapping.write_text('{\n  "traces": {"x": {"taskId": "status", "trial": -1}}\n}\n')
    traces = write_lines(tmp_path / "t.jsonl", *all_records())
    graded = cli("grade", str(suite_path), traces, "--map", str(mapping))
    assert graded.exit_code == 2
    assert f"{mapping}:2 $.traces.x.trial: Input should be greater than or equal to 0" in (
        graded.stderr
    )


def test_a_rubric_suite_needs_a_judge_as_run_does(cli: Invoke, tmp_path: Path) -> None:
    rubric = {"kind": "rubric", "rubric": [{"criterion": "polite", "weight": 1}]}
    suite = write_suite(tmp_path, SUITE | {"tasks": [SUITE["tasks"][1] | {"expected": rubric}]})
    graded = cli("grade", str(suite), write_lines(tmp_path / "t.jsonl", record("status", 0)))
    assert graded.exit_code == 2
    assert "choose a judge" in graded.stderr


def test_an_invalid_suite_is_reported_as_validate_does(cli: Invoke, tmp_path: Path) -> None:
    suite = tmp_path / "bad.json"
    suite.write_text('{"suiteId": "x"}')
    graded = cli("grade", str(suite), write_lines(tmp_path / "t.jsonl", record("status", 0)))
    assert graded.exit_code == 2
    assert "nothing was run" in graded.stderr


def test_malformed_arguments_reach_the_trajectory_check_raw_and_fail_the_step(
    cli: Invoke, suite_path: Path, tmp_path: Path
) -> None:
    broken = record("status", 0)
    broken["messages"][1]["tool_calls"][0]["function"]["arguments"] = "{orderId: B-2"
    graded = cli("grade", str(suite_path), write_lines(tmp_path / "t.jsonl", broken))
    first = trials_of(graded.report, "status")[0]
    assert (first["passed"], first["trajectoryMatched"]) == (False, False)
    assert first["calls"][0]["args"] == {"$raw": "{orderId: B-2"}
    assert first["outputScore"] == 1.0  # the answer was good, the path was not


def test_recorded_traces_of_an_adversarial_suite_are_scanned(cli: Invoke, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, SUITE | {"modes": ["golden", "adversarial"]})
    traces = write_lines(tmp_path / "t.jsonl", *all_records())
    graded = cli("grade", str(suite), traces, "--canary", "A-1", "--fail-on-severity", "critical")
    findings = {t["taskId"]: t["safetyFindings"] for t in graded.summary["tasks"]}
    assert findings == {
        "refund": [
            {"kind": "canary-leak", "severity": "critical"},
            {"kind": "forbidden-tool", "severity": "high"},
        ],
        "status": [],
    }
    assert "findings refund: canary-leak (critical), forbidden-tool (high)" in graded.stdout
    assert (
        cli(
            "verify", str(suite), str(graded.events), "--summary", str(graded.dir / "summary.json")
        ).exit_code
        == 0
    )
