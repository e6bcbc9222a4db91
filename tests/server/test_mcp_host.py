"""An ``mcp:COMMAND`` agent on ``serve``: configured ``agent = "mcp:…"`` (over HTTP, or with
``mcp_transport = "stdio"``), its runs are graded through the tool boundary as on the
command line — the good path passes, a forbidden call gates the run — on SQLite and
PostgreSQL, and ``fixtureRuns`` replays a completed run's recording."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openwop_client.wire_id import project_id
from pydantic import ValidationError

from openwop_eval.server.config import AgentConfig
from tests.hosts import Host, api, wait_for
from tests.mcp_servers.refunds import suite
from tests.server.test_agent_stall import start_host

AGENT = Path(__file__).parent.parent / "mcp_servers" / "sdk_agent.py"
AGENTS = f"""[agents."acme.mcp-agent"]
agent = "mcp:{sys.executable} {AGENT} {{mcp_config}}"
concurrency = 2

[agents."acme.mcp-stdio-agent"]
agent = "mcp:{sys.executable} {AGENT} {{mcp_config}}"
mcp_transport = "stdio"
concurrency = 2
"""


@pytest.fixture
def host(tmp_path: Path, database: str) -> Iterator[Host]:
    files = {f"suites/mcp-{case}.json": json.dumps(suite(case)) for case in ("good", "forbidden")}
    host = start_host(tmp_path, database, AGENTS, files)
    yield host
    host.stop()


def finished(host: Host, case: str, agent: str, **extra: Any) -> dict[str, Any]:
    """Run the case's suite on the host to its end; its summary."""
    ref = f"acme.support.evals.mcp-{case}@1.0.0"
    body = {"mode": "eval", "evalSuiteRef": ref, "agentId": agent, **extra}
    with api(host) as client:
        made = client.post("/runs", json=body)
        assert made.status_code == 201, made.text
        path = f"/runs/{project_id(made.json()['runId'])}"
        wait_for(lambda: client.get(path).json()["status"] == "completed", "the run", log=host.log)
        summary: dict[str, Any] = client.get(f"{path}/eval-summary").json()
        summary["runId"] = made.json()["runId"]
        return summary


@pytest.mark.parametrize("agent", ["acme.mcp-agent", "acme.mcp-stdio-agent"])
def test_an_mcp_agent_on_the_host_is_graded_through_the_boundary(host: Host, agent: str) -> None:
    good = finished(host, "good", agent)
    assert good["passed"] is True, good
    forbidden = finished(host, "forbidden", agent)
    assert forbidden["passed"] is False
    assert forbidden["gatedAggregateScore"] == 0


def test_fixture_runs_replay_an_mcp_run(host: Host) -> None:
    recorded = finished(host, "good", "acme.mcp-agent")
    replay = {"fixtureRuns": {"refund-good": recorded["runId"]}}
    replayed = finished(host, "good", "acme.mcp-agent", **replay)
    assert replayed["passed"] is True
    assert replayed["tasks"][0]["gatedScore"] == recorded["tasks"][0]["gatedScore"]


def test_mcp_settings_are_for_mcp_agents_only() -> None:
    assert AgentConfig(agent="mcp:x {mcp_config}", tool_catalog="t.json", mcp_transport="stdio")
    with pytest.raises(ValidationError, match="mcp_transport: for an mcp:COMMAND agent only"):
        AgentConfig(agent="scripted:a.json", mcp_transport="stdio")
    with pytest.raises(ValidationError, match="base_url: for an openai:MODEL agent only"):
        AgentConfig(agent="mcp:x", base_url="http://x/v1")
