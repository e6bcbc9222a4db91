"""An agent's failure keeps its cause: the table shows the leaf exception's type and message,
the report and the HTML its bounded traceback and a subprocess agent's stderr tail, never the
content-free events. A trial that could not reach its model endpoint fails on infrastructure:
the run exits 3 naming the endpoint and the count, and its gate stays shut."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from openwop_eval.cli.main import main
from tests.agents.failing_agents import MODEL

HERE = "tests.agents.failing_agents"


def suite(count: int = 1) -> dict[str, Any]:
    return {
        "suiteId": "acme.evals.failing",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 0.5},  # one trial in three may fail: the scores would pass
        "trials": {"count": count},
        "tasks": [
            {
                "taskId": "refund",
                "input": {"trial": 0},
                "expected": {
                    "kind": "golden",
                    "match": {"strategy": "contains", "value": "refunded"},
                },
            }
        ],
    }


def run(tmp: Path, agent: str, count: int = 1) -> tuple[Result, dict[str, Any], str]:
    path = tmp / "suite.json"
    path.write_text(json.dumps(suite(count)))
    report, events, html = tmp / "report.json", tmp / "events.jsonl", tmp / "report.html"
    argv = ["run", str(path), "--agent", agent, "--store", f"sqlite:///{tmp}/s.db"]
    argv += ["--report", str(report), "--events", str(events), "--html", str(html)]
    result = CliRunner().invoke(main, argv)
    return result, json.loads(report.read_text()), events.read_text()


def trials(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [trial for task in report["tasks"] for trial in task["trials"]]


def test_a_bug_shows_its_exception_in_the_table_and_its_traceback_in_the_report(
    tmp_path: Path,
) -> None:
    result, report, events = run(tmp_path, f"{HERE}:buggy")
    assert result.exit_code == 1, result.output
    assert "KeyError: 'origin'" in result.output
    (trial,) = trials(report)
    assert trial["errorKind"] == "exception"
    assert trial["traceback"].startswith("Traceback (most recent call last)")
    assert "_origin_of" in trial["traceback"]
    assert 'return str(flight["origin"])' in trial["traceback"]
    assert "Traceback" not in events  # content-free events: the kind only
    html = (tmp_path / "report.html").read_text()
    assert "_origin_of" in html


def test_an_exception_group_is_told_by_its_leaf(tmp_path: Path) -> None:
    result, report, _ = run(tmp_path, f"{HERE}:grouped")
    assert "ConnectionError: Connection closed" in result.output
    assert "ExceptionGroup" not in result.output
    assert "ConnectionError: Connection closed" in trials(report)[0]["traceback"]


def test_a_subprocess_agents_stderr_tail_is_in_the_report(tmp_path: Path) -> None:
    script = "import sys; sys.stderr.write('config.yaml: no such file\\n'); sys.exit(4)"
    result, report, events = run(tmp_path, f'cmd:{sys.executable} -c "{script}"')
    assert result.exit_code == 1, result.output
    (trial,) = trials(report)
    assert trial["stderr"] == "config.yaml: no such file"
    assert "config.yaml" not in events


def test_an_unreachable_endpoint_is_infrastructure_exit_3_and_the_gate_stays_shut(
    tmp_path: Path,
) -> None:
    result, report, _ = run(tmp_path, f"{HERE}:unreachable", count=3)
    assert result.exit_code == 3, result.output
    assert f"1 trial(s) could not reach {MODEL}" in result.output
    assert report["passed"] is False  # the scores alone (2 of 3) would have passed
    assert report["summary"]["passed"] is True  # the RFC's passed: the gate shut it
    assert [r["rule"] for r in report["gate"]["policyReasons"]] == ["infrastructure"]
    kinds = [t["errorKind"] for t in trials(report)]
    assert kinds == ["infrastructure", None, None]
    assert trials(report)[0]["endpoint"] == MODEL
    argv = ["verify", str(tmp_path / "suite.json"), str(tmp_path / "events.jsonl")]
    verified = CliRunner().invoke(main, argv)
    assert verified.exit_code == 0, verified.output  # the log agrees with its recompute:
    assert "gate: NOT PASSED" in verified.output  # the log alone shuts the gate, as the run did
    assert "1 trial(s) could not reach their model endpoint" in verified.output
