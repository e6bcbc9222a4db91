"""The host's deploy gate applies the gate policy: the suite's own, and ``[deployment]
require_all_tasks`` on top of it. A run whose suite passed on its aggregate while a task
failed promotes under the RFC alone, and is refused with ``422 eval_gate_unmet`` and the
policy in ``details`` when a policy requires every task."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from openwop_eval.server.config import DeploymentPolicy
from tests.server.inprocess import CAREFUL, AppHost
from tests.server.test_gate_evidence import agents, promote, refused

SUITE = "acme.support.evals.half@1.0.0"
Maker = Callable[..., AppHost]


def half_suite(tmp: Path, gate: dict[str, Any] | None = None) -> str:
    """Two tasks: the careful agent passes one and fails the other; passScore 0.5 passes."""

    def task(task_id: str, answer: str) -> dict[str, Any]:
        return {
            "taskId": task_id,
            "input": {"message": "hello"},
            "expected": {"kind": "golden", "match": {"strategy": "contains", "value": answer}},
        }

    doc: dict[str, Any] = {
        "suiteId": "acme.support.evals.half",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 0.5},
        "tasks": [task("greets", "Which order"), task("sings", "la la la")],
    }
    if gate is not None:
        doc["x-openwop-eval"] = {"gate": gate}
    path = tmp / "half.json"
    path.write_text(json.dumps(doc))
    return str(path)


def host(make_app: Maker, tmp: Path, gate: dict[str, Any] | None = None, **rules: Any) -> AppHost:
    deployment = DeploymentPolicy(
        gated_states=("active",), required_suites={CAREFUL: (SUITE,)}, **rules
    )
    return make_app(suites=(half_suite(tmp, gate),), agents=agents(), deployment=deployment)


def test_without_a_policy_the_rfc_pass_promotes(make_app: Maker, tmp_path: Path) -> None:
    app = host(make_app, tmp_path)
    run_id = app.run_to_end(SUITE, CAREFUL)
    assert app.store.get_run(run_id).summary["passed"] is True  # type: ignore[union-attr]
    assert promote(app, CAREFUL, "1.0.0", run_id).status_code == 200


def test_the_hosts_require_all_tasks_refuses_with_the_policy_in_details(
    make_app: Maker, tmp_path: Path
) -> None:
    app = host(make_app, tmp_path, require_all_tasks=True)
    run_id = app.run_to_end(SUITE, CAREFUL)
    response = promote(app, CAREFUL, "1.0.0", run_id)
    assert response.status_code == 422, response.text
    details = response.json()["details"]
    assert details["policy"] == ["policy-require-all-tasks"]
    assert details["failedTasks"] == ["sings"]
    assert details["evalRunId"] == run_id
    assert "does not meet its gate policy" in details["reason"]
    assert app.request("GET", f"/agents/{CAREFUL}/deployments").json() == []


def test_the_suites_own_policy_holds_at_the_gate(make_app: Maker, tmp_path: Path) -> None:
    app = host(make_app, tmp_path, gate={"requireAllTasks": True})
    run_id = app.run_to_end(SUITE, CAREFUL)
    assert "requireAllTasks" in refused(app, CAREFUL, "1.0.0", run_id)


def test_a_quarantined_task_does_not_hold_the_gate(make_app: Maker, tmp_path: Path) -> None:
    quarantine = [{"taskId": "sings", "until": "2999-12-31", "reason": "no songs yet"}]
    app = host(make_app, tmp_path, gate={"quarantine": quarantine}, require_all_tasks=True)
    run_id = app.run_to_end(SUITE, CAREFUL)
    assert promote(app, CAREFUL, "1.0.0", run_id).status_code == 200
