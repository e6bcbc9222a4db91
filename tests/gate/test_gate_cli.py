"""One verdict everywhere: on the booking scenario, the exit code, the table's closing line,
Markdown, JUnit, the JSON report and ``verify`` say the same gate, and name what shut it."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from openwop_eval.cli.main import main
from tests.gate.booking import FAILED, agent, suite, write


def run(tmp: Path, suite_doc: dict[str, Any], *extra: str, cost: float | None = 0.01) -> Result:
    suite_path, agent_spec = write(tmp, suite_doc, agent(cost))
    outputs = (
        "--markdown",
        "m.md",
        "--junit",
        "j.xml",
        "--report",
        "r.json",
        "--events",
        "e.jsonl",
    )
    given = [str(tmp / a) if a.endswith((".md", ".xml", ".json", ".jsonl")) else a for a in outputs]
    argv = ["run", suite_path, "--agent", agent_spec, "--quiet", "--store", f"sqlite:///{tmp}/s.db"]
    return CliRunner().invoke(main, [*argv, *given, *extra], catch_exceptions=False)


def junit(tmp: Path) -> dict[str, str]:
    """Per test case: failure, skipped or passed."""
    root = ET.parse(tmp / "j.xml").getroot()
    return {
        case.get("name", ""): next((child.tag for child in case if child.tag != "system-out"), "ok")
        for case in root.iter("testcase")
    }


def test_a_failed_task_that_no_policy_requires_passes_qualified_everywhere(tmp_path: Path) -> None:
    result = run(tmp_path, suite())
    assert result.exit_code == 0, result.output
    assert f"PASSED — 1 task failed: {FAILED}" in result.output
    assert f"✅ PASSED — 1 task failed: {FAILED}" in (tmp_path / "m.md").read_text()
    assert junit(tmp_path) == {
        FAILED: "skipped",
        "change-seat": "ok",
        "cancel-booking": "ok",
        "find-hotel": "ok",
    }
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["passed"] is True
    assert report["gate"]["failedTasks"] == [FAILED]
    assert report["summary"]["passed"] is True  # the RFC's summary, untouched


def test_require_all_tasks_shuts_the_gate_everywhere_and_says_why(tmp_path: Path) -> None:
    result = run(tmp_path, suite(), "--require-all-tasks")
    assert result.exit_code == 1, result.output
    assert "NOT PASSED" in result.output
    assert f"requireAllTasks: 1 task(s) did not pass: {FAILED}" in result.output
    markdown = (tmp_path / "m.md").read_text()
    assert "❌ did not pass" in markdown
    assert "requireAllTasks" in markdown
    cases = junit(tmp_path)
    assert (cases[FAILED], cases["(suite gate)"]) == ("failure", "failure")
    report = json.loads((tmp_path / "r.json").read_text())
    assert (report["passed"], report["gate"]["rfcPassed"]) == (False, True)
    assert [r["rule"] for r in report["gate"]["policyReasons"]] == ["policy-require-all-tasks"]
    assert report["summary"]["passed"] is True


def test_the_suites_own_policy_shuts_the_gate_like_the_flag(tmp_path: Path) -> None:
    result = run(tmp_path, suite({"requireAllTasks": True}))
    assert result.exit_code == 1, result.output


def test_an_unknown_cost_shuts_the_gate_until_the_user_counts_it_as_zero(tmp_path: Path) -> None:
    unknown = run(tmp_path, suite(), cost=None)
    assert unknown.exit_code == 1
    assert "reported no cost" in unknown.output
    (tmp_path / "again").mkdir()
    assert run(tmp_path / "again", suite(), "--unknown-cost", "zero", cost=None).exit_code == 0


def verify(tmp: Path) -> Result:
    return CliRunner().invoke(main, ["verify", str(tmp / "suite.json"), str(tmp / "e.jsonl")])


@pytest.mark.parametrize(
    ("flag", "said"),
    [
        ((), "gate: PASSED — 1 task(s)"),
        (("--require-all-tasks",), "gate: NOT PASSED (requireAllTasks"),
    ],
)
def test_verify_recomputes_the_gate_from_the_log(
    tmp_path: Path, flag: tuple[str, ...], said: str
) -> None:
    run(tmp_path, suite(), *flag)
    checked = verify(tmp_path)
    assert checked.exit_code == 0
    assert said in checked.output
    assert "log:" not in checked.output


def test_verify_catches_a_log_whose_gate_says_otherwise(tmp_path: Path) -> None:
    run(tmp_path, suite(), "--require-all-tasks")
    log = tmp_path / "e.jsonl"
    events = [json.loads(line) for line in log.read_text().splitlines()]
    for event in events:
        if event["type"] == "eval.completed":
            event["payload"]["x-openwop-eval"]["gate"] = {"passed": True, "rules": []}
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    checked = verify(tmp_path)
    assert "eval.completed x-openwop-eval.gate.passed" in checked.output
