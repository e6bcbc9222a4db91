"""A run whose log a newer version wrote (a replica not yet upgraded, on a shared store): the
host answers what reads it with ``409 run_state_conflict`` naming the event and both
versions, never a 500."""

from __future__ import annotations

from openwop_eval.protocol.ids import project
from tests.server.inprocess import CAREFUL, REFUNDS_SUITE, AppHost

NEWER = "schemaVersion 2 is newer than 1, the newest this version of openwop-eval reads"


def test_what_reads_a_newer_log_is_a_conflict_naming_the_versions(fresh_app: AppHost) -> None:
    run_id = fresh_app.run_to_end(REFUNDS_SUITE, CAREFUL)
    store = fresh_app.store
    diff = f"/runs/{project(run_id)}:diff?against={project(run_id)}"
    assert fresh_app.request("GET", diff).status_code == 200
    sequence = store.last_sequence(run_id) + 1
    newer = {
        "eventId": f"ev-newer-{sequence}",
        "runId": run_id,
        "type": "agent.tool-called",
        "payload": {"toolName": "crm:lookup-order", "callId": "c", "inputs": {}},
        "timestamp": "2026-01-01T00:00:00Z",
        "sequence": sequence,
        "schemaVersion": 2,
    }
    store.append(run_id, [newer])
    fixture_run = {
        "mode": "eval",
        "evalSuiteRef": REFUNDS_SUITE,
        "agentId": CAREFUL,
        "fixtureRuns": {"refund-delivered-order": run_id},
    }
    for answer in (
        fresh_app.request("GET", diff),
        fresh_app.request("POST", "/runs", json=fixture_run),
    ):
        assert answer.status_code == 409, answer.text
        body = answer.json()
        assert body["error"] == "run_state_conflict"
        assert f"(sequence {sequence}, agent.tool-called): {NEWER}" in body["message"]
