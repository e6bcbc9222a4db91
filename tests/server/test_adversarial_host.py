"""Adversarial runs on the host: the detectors of its ``[adversarial]`` policy, findings by
kind and severity in the summary, and the host's severity bar failing the task."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from openwop_eval.protocol.ids import project
from openwop_eval.server.config import AdversarialPolicy, AgentConfig
from tests.server.inprocess import AppHost

CANARY = "CANARY-host-91be"
AGENT = f"""
def agent(input, tools):
    return "ok {CANARY}" if input["leak"] else "ok"
"""


@pytest.fixture
def adversarial_app(
    make_app: Callable[..., AppHost], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AppHost:
    (tmp_path / "leaky.py").write_text(AGENT)
    suite = {
        "suiteId": "test.acme.evals.leaks",
        "version": "1.0.0",
        "modes": ["golden", "adversarial"],
        "tasks": [
            {
                "taskId": name,
                "input": {"leak": leak},
                "expected": {"kind": "golden", "match": {"strategy": "contains", "value": "ok"}},
            }
            for name, leak in (("quiet", False), ("leaks", True))
        ],
    }
    (tmp_path / "leaks.json").write_text(json.dumps(suite))
    monkeypatch.setenv("TEST_CANARIES", f"{CANARY}\n")
    return make_app(
        suites=(str(tmp_path / "leaks.json"),),
        agents={"test.leaky": AgentConfig(agent=f"{tmp_path / 'leaky.py'}:agent")},
        adversarial=AdversarialPolicy(canaries_env="TEST_CANARIES", fail_on_severity="critical"),
    )


def test_the_hosts_detectors_report_findings_and_its_bar_fails_the_task(
    adversarial_app: AppHost,
) -> None:
    run_id = adversarial_app.start(
        {"mode": "eval", "evalSuiteRef": "test.acme.evals.leaks@1.0.0", "agentId": "test.leaky"}
    )
    events = adversarial_app.follow(run_id)
    response = adversarial_app.request("GET", f"/runs/{project(run_id)}/eval-summary")
    summary: dict[str, Any] = response.json()
    tasks = {t["taskId"]: t for t in summary["tasks"]}
    assert tasks["quiet"]["safetyFindings"] == []
    assert tasks["leaks"]["safetyFindings"] == [{"kind": "canary-leak", "severity": "critical"}]
    assert tasks["leaks"]["passed"] is False
    assert tasks["leaks"]["score"] == 1.0  # the score stays what the output earned
    assert summary["passed"] is False
    eval_events = [e for e in events if e["type"].startswith(("eval.", "run."))]
    assert CANARY not in json.dumps(eval_events) + json.dumps(summary)


def test_the_host_serves_a_runs_report_to_its_own_tenant_only(adversarial_app: AppHost) -> None:
    run_id = adversarial_app.start(
        {"mode": "eval", "evalSuiteRef": "test.acme.evals.leaks@1.0.0", "agentId": "test.leaky"}
    )
    adversarial_app.follow(run_id)
    path = f"/runs/{project(run_id)}/report"
    page = adversarial_app.request("GET", path)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert "canary-leak" in page.text  # the finding, and where it was found
    other = adversarial_app.request("GET", path, key="globex-key")
    assert other.status_code == 403
    assert other.json()["error"] == "id_tenant_mismatch"
    assert adversarial_app.request("GET", path, key=None).status_code == 401


def test_the_run_diff_grades_each_run_under_the_bar_it_recorded(adversarial_app: AppHost) -> None:
    body = {"mode": "eval", "evalSuiteRef": "test.acme.evals.leaks@1.0.0", "agentId": "test.leaky"}
    runs = [adversarial_app.start(body) for _ in range(2)]
    summaries = []
    for run_id in runs:
        adversarial_app.follow(run_id)
        summaries.append(
            adversarial_app.request("GET", f"/runs/{project(run_id)}/eval-summary").json()
        )
    assert [s["gatedAggregateScore"] for s in summaries] == [0.5, 0.5]  # the leak fails
    response = adversarial_app.request(
        "GET", f"/runs/{project(runs[0])}:diff?against={project(runs[1])}"
    )
    assert response.status_code == 200, response.text
    figures = response.json()["stateDiff"]["eval"]
    for key in ("aggregateScore", "gatedAggregateScore", "passed", "passedCount"):
        assert (figures[key]["a"], figures[key]["b"]) == tuple(s[key] for s in summaries), key
    assert response.json()["stateDiff"]["tasks"] == []
