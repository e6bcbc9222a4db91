"""A host and a suite for the store-outage tests: fast trials, many of them, and a run
that can be held mid-way (the gated agent of tests/hosts.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from openwop_client.wire_id import project_id

from openwop_eval.files.suites import load_suite
from openwop_eval.log import verify_log
from openwop_eval.store import Store
from tests.hosts import GATED_AGENT, GATED_SUITE, Host, wait_for

FAST_AGENT = """
import asyncio
from openwop_eval.agents import AgentReply

async def agent(input, tools):
    await asyncio.sleep(0.01)
    await tools.call("crm:lookup", {"n": tools.context.trial})
    return AgentReply(output="ok", latency_ms=10)
"""


def many_suite(tasks: int = 10, trials: int = 100) -> dict[str, Any]:
    return {
        "suiteId": "test.acme.evals.many",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 1},
        "trials": {"count": trials, "passRule": "mean"},
        "tasks": [
            {
                "taskId": f"t{i}",
                "input": {},
                "expected": {
                    "kind": "golden",
                    "match": {"strategy": "exact", "value": "ok"},
                    "trajectory": {"steps": [{"tool": "crm:lookup"}]},
                },
                "fixtures": {"toolResponses": [{"tool": "crm:lookup", "response": {}}]},
            }
            for i in range(tasks)
        ],
    }


MANY = "test.acme.evals.many@1.0.0"
GATED = f"{GATED_SUITE['suiteId']}@1.0.0"


def start_host(tmp: Path, database: str, suite: dict[str, Any]) -> Host:
    """A host with the fast agent, the gated one, short leases (a run left open is taken
    back within seconds) and one API key (tenant acme)."""
    (tmp / "suites").mkdir()
    (tmp / "suites" / "many.json").write_text(json.dumps(suite))
    (tmp / "suites" / "gated.json").write_text(json.dumps(GATED_SUITE))
    (tmp / "agent.py").write_text(FAST_AGENT)
    (tmp / "gated_agent.py").write_text(GATED_AGENT)
    config = tmp / "host.toml"
    config.write_text(
        """
suites = ["suites/"]

[agents."test.many"]
agent = "agent.py:agent"
concurrency = 50

[agents."test.gated"]
agent = "gated_agent.py:agent"
concurrency = 1

[replicas]
lease_seconds = 3
heartbeat_seconds = 1

[[api_keys]]
name = "acme-ci"
tenant = "acme"
key = "acme-key"
"""
    )
    gate = tmp / "gate"
    gate.mkdir()
    return Host(config, database, gate).start()


def client(host: Host) -> httpx.Client:
    return httpx.Client(base_url=host.url, headers={"Authorization": "Bearer acme-key"}, timeout=60)


def create(c: httpx.Client, suite: str, agent: str) -> str:
    response = c.post("/runs", json={"mode": "eval", "evalSuiteRef": suite, "agentId": agent})
    assert response.status_code == 201, response.text
    return str(response.json()["runId"])


def status(c: httpx.Client, run_id: str) -> str | None:
    """The run's status; None while the host cannot read it."""
    response = c.get(f"/runs/{project_id(run_id)}")
    return str(response.json()["status"]) if response.status_code == 200 else None


def ended(c: httpx.Client, run_id: str, host: Host, seconds: float = 120) -> str:
    return str(
        wait_for(
            lambda: (s := status(c, run_id)) in ("completed", "failed", "cancelled") and s,
            f"run {run_id} to end",
            seconds,
            host.log,
        )
    )


def scored(c: httpx.Client, run_id: str) -> int:
    poll = c.get(f"/runs/{project_id(run_id)}/events/poll", params={"timeout": 0, "limit": 1000})
    return sum(1 for event in poll.json()["events"] if event["type"] == "eval.scored")


def verify_stored(database: str, suite_path: Path, run_id: str) -> int:
    """What ``openwop-eval verify`` does, on the stored log: the summary recomputed from the
    events agrees with the one the run recorded, and the log has no contradiction; returns
    the number of trials scored (each once: a second score is a contradiction)."""
    store = Store(database)
    try:
        given = store.summary(run_id)
        assert given is not None
        docs = list(store.iter_events(run_id))
    finally:
        store.close()
    result = verify_log(load_suite(str(suite_path)).suite, docs, given, ordered=True)
    assert result.agrees, result.mismatches
    assert not result.log_problems, result.log_problems
    assert [d["sequence"] for d in docs] == list(range(len(docs)))
    return sum(1 for d in docs if d["type"] == "eval.scored")
