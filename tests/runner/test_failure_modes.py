"""A fixture miss, an agent exception, a timeout and a forbidden call, each shown correctly in
the summary, the report, the table and the exit code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.runner.conftest import Ran, write

AGENT = """
import asyncio

async def agent(input, tools):
    mode = input["mode"]
    if mode == "miss":
        try:
            await tools.call("crm:unknown", {})
        except LookupError:
            pass
        return "done"
    if mode == "raise":
        raise RuntimeError("the model provider returned 500")
    if mode == "hang":
        await asyncio.sleep(60)
    if mode == "forbidden":
        await tools.call("crm:lookup", {"id": 1})
        await tools.call("accounts:delete", {"id": 1})
        return "done"
    await tools.call("crm:lookup", {"id": 1})
    return "done"
"""


def suite(mode: str) -> dict[str, Any]:
    return {
        "suiteId": "test.openwop.evals.failures",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 1},
        "tasks": [
            {
                "taskId": "t",
                "input": {"mode": mode},
                "expected": {
                    "kind": "golden",
                    "match": {"strategy": "exact", "value": "done"},
                    "trajectory": {"steps": [{"tool": "crm:lookup"}], "forbidden": ["accounts:*"]},
                },
                "fixtures": {
                    "toolResponses": [
                        {"tool": "crm:lookup", "response": {"ok": True}},
                        {"tool": "accounts:delete", "response": {}},
                    ]
                },
            }
        ],
    }


@pytest.fixture
def run_mode(tmp_path: Path, run_cli: Callable[..., Ran]) -> Callable[[str], Ran]:
    agent = write(tmp_path / "agent.py", AGENT)

    def go(mode: str) -> Ran:
        path = write(tmp_path / f"{mode}.json", suite(mode))
        return run_cli(str(path), "--agent", f"{agent}:agent", "--timeout", "0.2")

    return go


@pytest.mark.parametrize(
    ("mode", "outcome", "rule", "table_text"),
    [
        (
            "miss",
            "failed-closed",
            "fixture-miss",
            "call 1 to crm:unknown had no fixture response (onMiss: fail)",
        ),
        (
            "raise",
            "errored",
            "agent-error",
            "the agent errored: RuntimeError: the model provider returned 500",
        ),
        ("hang", "errored", "agent-error", "the agent errored: timed out after 0.2 s"),
        ("forbidden", "failed", "forbidden", "called forbidden tool accounts:delete at call 2"),
    ],
)
def test_failure_is_reported_everywhere(
    run_mode: Callable[[str], Ran], mode: str, outcome: str, rule: str, table_text: str
) -> None:
    ran = run_mode(mode)
    assert ran.exit_code == 1
    assert ran.summary is not None
    assert ran.summary["passed"] is False
    task = ran.summary["tasks"][0]
    assert task["passed"] is False
    assert task["gatedScore"] == 0
    expected_score = 1.0 if mode == "forbidden" else 0.0  # a forbidden call keeps the measurement
    assert task["score"] == expected_score
    assert ran.report is not None
    trial = ran.report["tasks"][0]["trials"][0]
    assert trial["outcome"] == outcome
    assert trial["reasons"][0]["rule"] == rule
    assert table_text in ran.output
    scored = ran.scored()
    assert [(s["score"], s["passed"]) for s in scored] == [(expected_score, False)]
    if mode == "raise":
        assert "provider returned 500" in trial["error"]
        # the error's text stays out of the events (ids in them are hex: "500" may occur)
        assert all("provider returned" not in str(e["payload"]) for e in ran.events)


def test_a_clean_trial_passes_and_exits_zero(run_mode: Callable[[str], Ran]) -> None:
    ran = run_mode("ok")
    assert ran.exit_code == 0
    assert ran.summary is not None
    assert ran.summary["passed"] is True
    assert ran.report is not None
    assert ran.report["tasks"][0]["trials"][0]["calls"] == [
        {
            "tool": "crm:lookup",
            "args": {"id": 1},
            "missed": False,
            "status": "ok",
            "result": {"ok": True},
            "error": None,
        }
    ]


def test_errors_never_reach_eval_events(run_mode: Callable[[str], Ran]) -> None:
    ran = run_mode("raise")
    for event in ran.events:
        assert "provider returned" not in str(event)
    failed = [e for e in ran.events if e["type"] == "agent.invocation-completed"]
    assert failed[0]["payload"]["outcome"] == "failed"
    assert failed[0]["payload"]["x-openwop-eval"]["error"] == "exception"
