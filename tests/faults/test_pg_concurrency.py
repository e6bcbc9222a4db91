"""Many runs at once on PostgreSQL with no fault at all: none may end ``failed``.

Ten runs of a thousand trials each commit side by side while the replica's heartbeat renews
their leases and looks for runs to take over, every second. The heartbeat once locked the
replica's own live runs' rows and then their leases, against each commit's order (its lease,
then its events, whose foreign key locks the run's row): PostgreSQL broke the deadlocks by
failing commits, and the runs ended ``failed``.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client.wire_id import project_id

from tests.faults.outage import FAST_AGENT, many_suite
from tests.hosts import Host, _postgres_database, wait_for

SUITE = many_suite(tasks=10, trials=100)

RUNS, ROUNDS = 10, 5


def _config(tmp: Path) -> Path:
    (tmp / "suites").mkdir()
    (tmp / "suites" / "many.json").write_text(json.dumps(SUITE))
    (tmp / "agent.py").write_text(FAST_AGENT)
    config = tmp / "host.toml"
    config.write_text(
        """
suites = ["suites/"]

[agents."test.many"]
agent = "agent.py:agent"
concurrency = 50

[replicas]
lease_seconds = 3
heartbeat_seconds = 1

[[api_keys]]
name = "acme-ci"
tenant = "acme"
key = "acme-key"
"""
    )
    return config


@pytest.fixture
def postgres() -> Any:
    yield from _postgres_database()


def test_ten_concurrent_thousand_trial_runs_for_five_rounds_end_completed(
    tmp_path: Path, postgres: str
) -> None:
    gate = tmp_path / "gate"
    gate.mkdir()
    host = Host(_config(tmp_path), postgres, gate).start()
    client = httpx.Client(
        base_url=host.url, headers={"Authorization": "Bearer acme-key"}, timeout=60
    )

    def create(_: int) -> str:
        body = {"mode": "eval", "evalSuiteRef": f"{SUITE['suiteId']}@1.0.0", "agentId": "test.many"}
        response = client.post("/runs", json=body)
        assert response.status_code == 201, response.text
        return str(response.json()["runId"])

    def ended(run_id: str) -> dict[str, Any] | None:
        run = client.get(f"/runs/{project_id(run_id)}").json()
        return run if run["status"] in ("completed", "failed", "cancelled") else None

    try:
        statuses: list[str] = []
        with ThreadPoolExecutor(RUNS) as pool:
            for _ in range(ROUNDS):
                started = list(pool.map(create, range(RUNS)))
                for run_id in started:
                    run = wait_for(
                        lambda run_id=run_id: ended(run_id), f"run {run_id} to end", 180, host.log
                    )
                    statuses.append(run["status"])
        assert statuses == ["completed"] * (RUNS * ROUNDS), host.log.read_text()[-3000:]
        assert "deadlock" not in host.log.read_text()
    finally:
        client.close()
        host.stop()
