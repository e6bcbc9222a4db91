"""The host's ``tool_map``: an agent configured with a map file has its tools renamed to the
suites' names, as ``run --tool-map`` does; a map that cannot be used fails at start-up."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from openwop_client.wire_id import project_id

from tests.agents.test_tool_map import LOOKUP, MAP, REFUND, suite
from tests.hosts import Host, api, wait_for
from tests.server.test_agent_stall import start_host

AGENT = Path(__file__).parent.parent / "agents" / "renamed_agent.py"
AGENTS = f"""[agents."acme.renamed"]
agent = "{AGENT}:agent"
tool_map = "tool-map.json"

[agents."acme.unmapped"]
agent = "{AGENT}:agent"
"""


@pytest.fixture
def host(tmp_path: Path, database: str) -> Iterator[Host]:
    files = {
        "suites/renamed.json": json.dumps(suite([LOOKUP, REFUND])),
        "tool-map.json": json.dumps(MAP),
    }
    host = start_host(tmp_path, database, AGENTS, files)
    yield host
    host.stop()


def passed(host: Host, agent: str) -> bool:
    body = {"mode": "eval", "evalSuiteRef": "acme.evals.renamed@1.0.0", "agentId": agent}
    with api(host) as client:
        made = client.post("/runs", json=body)
        assert made.status_code == 201, made.text
        path = f"/runs/{project_id(made.json()['runId'])}"
        wait_for(lambda: client.get(path).json()["status"] == "completed", "the run", log=host.log)
        return bool(client.get(f"{path}/eval-summary").json()["passed"])


def test_a_configured_tool_map_renames_the_agents_tools(host: Host) -> None:
    assert passed(host, "acme.renamed") is True
    assert passed(host, "acme.unmapped") is False
