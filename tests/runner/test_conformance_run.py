"""The scripted conformance agent reproduces both RFC 0246 fixtures end to end, and verify
recomputes the verdict from the event log alone."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from openwop_eval.cli.main import main
from openwop_eval.conformance import witness
from tests.runner.conftest import FIXTURES, Ran


def fixture_args(name: str) -> list[str]:
    return [
        str(FIXTURES / f"{name}.suite.json"),
        "--agent",
        f"scripted:{FIXTURES / 'conformance-mock-agent.json'}",
    ]


def failed(assertions: list[witness.Assertion]) -> list[str]:
    return [str(a) for a in assertions if not a.passed]


def test_mean_gated_fixture_end_to_end(run_cli: Callable[..., Ran]) -> None:
    ran = run_cli(*fixture_args(witness.MEAN_FIXTURE))
    assert ran.exit_code == 1
    assert ran.summary is not None
    assert [(s["score"], s["passed"]) for s in ran.scored()] == [(1, False), (1, False)]
    assert failed(witness.mean_gated(ran.scored(), ran.summary)) == []
    assert failed(witness.gated_fields_shape(ran.summary)) == []
    assert "called forbidden tool accounts:delete at call 2" in ran.output


def test_suite_gated_fixture_end_to_end(run_cli: Callable[..., Ran]) -> None:
    ran = run_cli(*fixture_args(witness.SUITE_FIXTURE))
    assert ran.exit_code == 1
    assert ran.summary is not None
    assert [(s["taskId"], s["score"], s["passed"]) for s in ran.scored()] == [
        ("matched-path", 1, True),
        ("wrong-path", 1, False),
    ]
    assert failed(witness.suite_gated(ran.scored(), ran.summary)) == []
    assert ran.summary["passed"] is False


def test_event_sequence_is_the_openwop_eval_sequence(run_cli: Callable[..., Ran]) -> None:
    ran = run_cli(*fixture_args(witness.SUITE_FIXTURE))
    types = [e["type"] for e in ran.events]
    assert types[:2] == ["run.started", "eval.started"]
    assert types[-2:] == ["eval.completed", "run.completed"]
    assert [e["sequence"] for e in ran.events] == list(range(len(ran.events)))
    assert types.count("eval.scored") == 2
    per_trial = types[2:-2]
    first = per_trial[: per_trial.index("eval.scored") + 1]
    assert first == [
        "agent.invocation-started",
        "agent.tool-called",
        "agent.tool-returned",
        "agent.tool-called",
        "agent.tool-returned",
        "agent.decided",
        "agent.invocation-completed",
        "eval.scored",
    ]
    for event in ran.events[2:-2]:
        ext = event["payload"]["x-openwop-eval"]
        assert set(ext) >= {"taskId", "trial", "invocationId"}
    completed = ran.events[-2]["payload"]
    assert completed == {
        "aggregateScore": 1.0,
        "passed": False,
        "taskCount": 2,
        "passedCount": 1,
        "x-openwop-eval": {"gate": {"passed": False, "rules": []}},  # content-free: codes only
    }
    assert ran.events[-1]["payload"]["outputs"]["evalSummary"] == ran.summary


def test_eval_events_and_summary_carry_no_content(run_cli: Callable[..., Ran]) -> None:
    ran = run_cli(*fixture_args(witness.SUITE_FIXTURE))
    for event in ran.events:
        if event["type"].startswith("eval.") or event["type"] == "agent.decided":
            assert "refund-issued" not in json.dumps(event)
    assert "refund-issued" not in json.dumps(ran.summary)


def verify(suite: Path, events: Path, summary: Path) -> tuple[int, str]:
    result = CliRunner().invoke(
        main, ["verify", str(suite), str(events), "--summary", str(summary)]
    )
    return result.exit_code, result.stderr


def test_verify_reproduces_the_summary_exactly(run_cli: Callable[..., Ran]) -> None:
    for name in (witness.MEAN_FIXTURE, witness.SUITE_FIXTURE):
        ran = run_cli(*fixture_args(name))
        code, err = verify(
            FIXTURES / f"{name}.suite.json", ran.dir / "events.jsonl", ran.dir / "summary.json"
        )
        assert code == 0, err
        assert "agrees with the event log" in err


def test_verify_names_the_fields_an_altered_score_changes(run_cli: Callable[..., Ran]) -> None:
    ran = run_cli(*fixture_args(witness.SUITE_FIXTURE))
    lines = (ran.dir / "events.jsonl").read_text().splitlines()
    for i, line in enumerate(lines):
        event = json.loads(line)
        if event["type"] == "eval.scored" and event["payload"]["taskId"] == "matched-path":
            event["payload"]["score"] = 0.5
            lines[i] = json.dumps(event)
    tampered = ran.dir / "tampered.jsonl"
    tampered.write_text("\n".join(lines) + "\n")
    code, err = verify(
        FIXTURES / f"{witness.SUITE_FIXTURE}.suite.json", tampered, ran.dir / "summary.json"
    )
    assert code == 1
    assert "$.aggregateScore: given 1.0, recomputed 0.75" in err
    assert "$.tasks[0].score: given 1.0, recomputed 0.5" in err
    assert "$.tasks[0].passed: given True, recomputed False" in err
    assert "eval.scored for task 'matched-path' trial 0 says passed=true" in err
