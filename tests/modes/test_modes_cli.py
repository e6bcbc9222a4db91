"""``run`` with a baseline and with detectors: the baseline is chosen and named, the options
are refused where they mean nothing, and the whole loop closes with ``compare``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from openwop_eval.cli.main import main

AGENT = """
import os

def agent(input, tools):
    if input["n"] == 0 and os.path.exists(os.environ["WORSE_FILE"]):
        return "no"
    return "ok SECRET-CANARY-77" if input["n"] == 1 and os.environ.get("LEAK") else "ok"
"""


def suite(modes: list[str]) -> dict[str, Any]:
    return {
        "suiteId": "test.openwop.evals.modes-cli",
        "version": "1.0.0",
        "modes": modes,
        "thresholds": {"passScore": 0.8},
        "tasks": [
            {
                "taskId": f"t{n}",
                "input": {"n": n},
                "expected": {"kind": "golden", "match": {"strategy": "contains", "value": "ok"}},
            }
            for n in range(6)
        ],
    }


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    (tmp_path / "agent.py").write_text(AGENT)
    monkeypatch.setenv("WORSE_FILE", str(tmp_path / "worse"))
    for name, modes in {
        "regression": ["golden", "regression"],
        "adversarial": ["golden", "adversarial"],
        "plain": ["golden"],
    }.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(suite(modes)))
    return {"tmp": tmp_path, "store": f"sqlite:///{tmp_path / 'store.sqlite'}"}


def run(world: dict[str, Any], suite_name: str, *extra: str) -> Result:
    tmp = world["tmp"]
    argv = [
        "run",
        str(tmp / f"{suite_name}.json"),
        "--agent",
        f"{tmp / 'agent.py'}:agent",
        "--store",
        world["store"],
        "--quiet",
        *extra,
    ]
    return CliRunner().invoke(main, argv)


def out(world: dict[str, Any], name: str) -> Any:
    return json.loads((world["tmp"] / name).read_text())


def test_a_regression_run_names_the_newest_baseline_and_compare_gates_it(
    world: dict[str, Any],
) -> None:
    tmp = world["tmp"]
    first = run(
        world, "regression", "--out", str(tmp / "base.json"), "--events", str(tmp / "b.jsonl")
    )
    assert first.exit_code == 0, first.output
    assert "this run has no baseline" in first.stderr
    (tmp / "worse").touch()
    second = run(world, "regression", "--out", str(tmp / "cand.json"))
    assert second.exit_code == 0, second.output  # 5/6 still clears the suite's bar
    base_id = json.loads((tmp / "b.jsonl").read_text().splitlines()[0])["runId"]
    assert f"regression: baseline {base_id} (the newest completed run)" in second.stderr
    regression = out(world, "cand.json")["regression"]
    assert regression["baselineRunId"] == base_id
    assert "aggregate score -0.167 against baseline" in second.stdout
    gate = CliRunner().invoke(
        main, ["compare", str(tmp / "b.jsonl"), str(tmp / "cand.json"), "--fail-on-regression"]
    )
    assert gate.exit_code == 1
    assert "t0" in gate.output


def test_a_baseline_file_names_its_run(world: dict[str, Any]) -> None:
    tmp = world["tmp"]
    assert run(world, "regression", "--report", str(tmp / "report.json")).exit_code == 0
    named = out(world, "report.json")["runId"]
    again = run(
        world, "regression", "--baseline", str(tmp / "report.json"), "--out", str(tmp / "s.json")
    )
    assert again.exit_code == 0, again.output
    assert out(world, "s.json")["regression"]["baselineRunId"] == named
    bare = run(world, "regression", "--baseline", str(tmp / "s.json"), "--out", str(tmp / "t.json"))
    assert bare.exit_code == 0, bare.output
    assert out(world, "t.json")["regression"]["baselineRunId"].startswith("sha256:")


def test_a_baseline_report_of_a_newer_version_is_refused_naming_both(
    world: dict[str, Any],
) -> None:
    tmp = world["tmp"]
    assert run(world, "regression", "--report", str(tmp / "report.json")).exit_code == 0
    newer = {**out(world, "report.json"), "reportVersion": 2}
    (tmp / "newer.json").write_text(json.dumps(newer, indent=2))
    refused = run(world, "regression", "--baseline", str(tmp / "newer.json"))
    assert refused.exit_code == 2
    assert (
        f"{tmp / 'newer.json'}:2 $.reportVersion: reportVersion 2 is newer than 1, the newest"
        " this version reads"
    ) in refused.stderr.replace("\n", "")
    assert "Traceback" not in refused.output


@pytest.mark.parametrize(
    ("suite_name", "extra", "message"),
    [
        (
            "plain",
            ["--baseline", "local/abc"],
            "--baseline needs a suite whose modes include regression",
        ),
        ("plain", ["--canary", "x"], "need an adversarial suite"),
        ("plain", ["--fail-on-severity", "high"], "needs a suite whose modes include adversarial"),
        ("regression", ["--baseline", "local/" + "0" * 24], "is not a usable baseline"),
        ("adversarial", ["--severity", "canary-leak"], "expected KIND=LEVEL"),
        ("adversarial", ["--severity", "canary-leak=severe"], "expected KIND=LEVEL"),
    ],
)
def test_options_that_mean_nothing_here_are_usage_errors(
    world: dict[str, Any], suite_name: str, extra: list[str], message: str
) -> None:
    result = run(world, suite_name, *extra)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_an_adversarial_run_with_a_severity_bar(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp = world["tmp"]
    monkeypatch.setenv("LEAK", "1")
    (tmp / "canaries.txt").write_text("SECRET-CANARY-77\n\n")
    result = run(
        world,
        "adversarial",
        "--canaries-file",
        str(tmp / "canaries.txt"),
        "--severity",
        "canary-leak=low",
        "--fail-on-severity",
        "low",
        "--out",
        str(tmp / "s.json"),
        "--events",
        str(tmp / "e.jsonl"),
        "--report",
        str(tmp / "r.json"),
        "--markdown",
        str(tmp / "r.md"),
    )
    assert result.exit_code == 0, result.output  # five of six tasks pass the 0.8 bar
    assert "- `t1`: canary-leak (low)" in (tmp / "r.md").read_text()
    report = json.loads((tmp / "r.json").read_text())
    t1 = next(t for t in report["tasks"] if t["taskId"] == "t1")
    assert t1["trials"][0]["safetyFindings"] == [
        {"kind": "canary-leak", "severity": "low", "where": "canary 1 in the output at $"}
    ]
    assert "findings t1: canary-leak (low)" in result.stdout
    tasks = {t["taskId"]: t for t in out(world, "s.json")["tasks"]}
    assert tasks["t1"]["passed"] is False
    log = [json.loads(line) for line in (tmp / "e.jsonl").read_text().splitlines()]
    assert "SECRET-CANARY-77" not in json.dumps(
        [e for e in log if e["type"].startswith(("eval.", "run."))]
    )
    verify = CliRunner().invoke(
        main,
        [
            "verify",
            str(tmp / "adversarial.json"),
            str(tmp / "e.jsonl"),
            "--summary",
            str(tmp / "s.json"),
        ],
    )
    assert verify.exit_code == 0, verify.output
