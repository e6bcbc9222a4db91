"""An ``mcp:COMMAND`` agent on ``serve``: configured ``agent = "mcp:…"`` (over HTTP, or with
``mcp_transport = "stdio"``), its runs are graded through the tool boundary as on the
command line — the good path passes, a forbidden call gates the run — on SQLite and
PostgreSQL, and ``fixtureRuns`` replays a completed run's recording."""

from __future__ import annotations

import json
import shutil
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from openwop_client.wire_id import project_id
from pydantic import ValidationError

from openwop_eval.server.catalog import Catalog
from openwop_eval.server.config import AgentConfig, ConfigError, HostConfig, load_config
from tests.hosts import Host, api, wait_for, write_config
from tests.mcp_servers.refunds import suite
from tests.mcp_servers.upstream_server import server
from tests.server.test_agent_stall import start_host

AGENT = Path(__file__).parent.parent / "mcp_servers" / "sdk_agent.py"
UPSTREAM = AGENT.with_name("upstream_server.py")
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


@contextmanager
def payments_served() -> Iterator[str]:
    """The payments upstream over Streamable HTTP on loopback, until the block ends."""
    app = server("payments").streamable_http_app(stateless_http=True, json_response=True)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    served = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=served.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not served.started and thread.is_alive():
        thread.join(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    finally:
        served.should_exit = True
        thread.join(10)


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


# --- mcp_upstreams: real MCP servers recorded on the host, replayed by fixtureRuns -----------


def _live_good() -> dict[str, Any]:
    """The good case with no fixtures (the upstreams answer), under a suite id of its own."""
    doc = suite("good")
    doc["suiteId"] = "acme.support.evals.mcp-live"
    for task in doc["tasks"]:
        del task["fixtures"]
    return doc


def test_an_agents_mcp_upstreams_are_recorded_and_a_replay_needs_none_of_them(
    tmp_path: Path, database: str
) -> None:
    (tmp_path / "servers").mkdir()
    shutil.copy(UPSTREAM, tmp_path / "servers" / "upstream_server.py")
    stdio = f"stdio:{sys.executable} servers/upstream_server.py"  # relative to the config
    with payments_served() as payments_url:
        agent = f"""[agents."acme.mcp-upstream-agent"]
agent = "mcp:{sys.executable} {AGENT} {{mcp_config}}"

[agents."acme.mcp-upstream-agent".mcp_upstreams]
crm = "{stdio} crm"
payments = "{payments_url}"
accounts = "{stdio} accounts"
"""
        files = {"suites/mcp-live.json": json.dumps(_live_good())}
        host = start_host(tmp_path, database, agent, files)
        try:
            recorded = finished(host, "live", "acme.mcp-upstream-agent")
            with api(host) as client:
                path = f"/runs/{project_id(recorded['runId'])}/events/poll"
                docs = client.get(path, params={"timeout": 0}).json()["events"]
        except BaseException:
            host.stop()
            raise
    try:  # the payments server is gone: a replay must not need it, a live run fails on it
        replay = {"fixtureRuns": {"refund-good": recorded["runId"]}}
        replayed = finished(host, "live", "acme.mcp-upstream-agent", **replay)
        live = finished(host, "live", "acme.mcp-upstream-agent")
    finally:
        host.stop()
    assert recorded["passed"] is True, recorded
    returned = [d["payload"] for d in docs if d["type"] == "agent.tool-returned"]
    assert returned[0]["outcome"]["structuredContent"] == {"orderId": "A-1001", "totalUsd": 59.9}
    started = next(d for d in docs if d["type"] == "agent.invocation-started")
    listing = started["payload"]["x-openwop-eval"]["toolListing"]
    assert listing["payments:refund"]["description"] == "Refund an order, in full or in part."
    assert replayed["passed"] is True, replayed
    assert replayed["tasks"][0]["gatedScore"] == recorded["tasks"][0]["gatedScore"] == 1
    assert live["passed"] is False  # the upstream away: infrastructure, never a pass


def test_an_upstream_that_cannot_serve_stops_the_host_at_start_located(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="must be http:// or https://"):
        AgentConfig(agent="mcp:x {mcp_config}", mcp_upstreams={"crm": "ftp://crm/mcp"})
    with pytest.raises(ValidationError, match=r"without ':' or '\.'"):
        AgentConfig(agent="mcp:x {mcp_config}", mcp_upstreams={"crm.v2": "http://crm/mcp"})
    with pytest.raises(ValidationError, match='not with executor = "ray"'):
        HostConfig(
            executor="ray",
            agents={"a": AgentConfig(agent="cmd:x", mcp_upstreams={"crm": "http://crm/mcp"})},
        )
    config = write_config(tmp_path, run_workers=0)
    failing = f"stdio:{sys.executable} -c 'raise SystemExit(4)'"
    config.write_text(
        config.read_text().replace(
            "[deployment]",
            f'[agents."acme.broken"]\nagent = "mcp:x {{mcp_config}}"\n'
            f'mcp_upstreams = {{ crm = "{failing}" }}\n\n[deployment]',
        )
    )
    with pytest.raises(ConfigError, match=r"agents\.acme\.broken: an MCP upstream failed"):
        Catalog(load_config(config))
