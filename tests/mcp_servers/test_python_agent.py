"""A Python agent asks its ``tools`` for the trial's MCP servers and uses its own MCP client:
its calls go through the same boundary, graded as any (a good path passes, a wrong one
fails with the reason); the servers end with the trial."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from openwop_eval.agents.base import AsyncTools, TrialContext
from openwop_eval.agents.mcp.servers import TrialMcp
from openwop_eval.cli.main import main
from tests.mcp_servers.refunds import suite
from tests.mcp_servers.test_mcp_agent import refusal

AGENTS = Path(__file__).with_name("inprocess_agents.py")


def run(tmp: Path, case: str, agent: str) -> Result:
    path = tmp / f"{case}.json"
    path.write_text(json.dumps(suite(case, count=3)))
    argv = ["run", str(path), "--agent", f"{AGENTS}:{agent}", "--store", f"sqlite:///{tmp}/s.db"]
    return CliRunner().invoke(main, [*argv, "--events", str(tmp / "e.jsonl"), "--quiet"])


@pytest.mark.parametrize("agent", ["calls_over_mcp", "calls_over_mcp_in_a_thread"])
def test_a_good_path_through_the_agents_own_mcp_client_passes(tmp_path: Path, agent: str) -> None:
    result = run(tmp_path, "good", agent)
    assert result.exit_code == 0, result.output
    docs = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
    called = [d["payload"]["toolName"] for d in docs if d["type"] == "agent.tool-called"]
    assert sorted(called) == ["crm:lookup-order"] * 3 + ["payments:refund"] * 3


@pytest.mark.parametrize(
    ("case", "reason"),
    [("skipped-step", "crm:lookup-order"), ("forbidden", "accounts:delete"),
     ("unanswered", "crm:lookup-customer")],
)  # fmt: skip
@pytest.mark.parametrize("agent", ["calls_over_mcp", "calls_over_mcp_in_a_thread"])
def test_a_wrong_path_through_the_agents_own_mcp_client_fails(
    tmp_path: Path, agent: str, case: str, reason: str
) -> None:
    result = run(tmp_path, case, agent)
    assert result.exit_code == 1, result.output
    assert reason in result.output


def test_an_agent_that_never_asks_starts_no_servers(tmp_path: Path) -> None:
    assert run(tmp_path, "good", "never_asks").exit_code == 0


def test_the_servers_end_with_the_trial() -> None:
    class Port:
        async def call(self, tool: str, args: object, transport: str | None = None) -> object:
            return {}

    async def play() -> str:
        context = TrialContext("t", 0, {}, tool_names=("crm:lookup-order",))
        mcp = TrialMcp(context, Port(), asyncio.get_running_loop())
        servers = await AsyncTools(Port(), context, mcp).mcp_servers()
        assert servers.names == ("crm",)
        mcp.close()
        return await refusal(servers.server_url("crm"))

    assert "no trial is served at this address" in asyncio.run(play())
    with pytest.raises(RuntimeError, match="no MCP servers"):
        asyncio.run(AsyncTools(Port(), TrialContext("t", 0, {})).mcp_servers())


def test_concurrent_trials_calls_land_on_the_trial_that_made_them(tmp_path: Path) -> None:
    doc = suite("good", count=40)
    doc["tasks"][0]["expected"]["trajectory"]["steps"] = [{"tool": "crm:lookup-order"}]
    doc["tasks"][0]["fixtures"]["toolResponses"] = [
        {"tool": "crm:lookup-order", "response": {"totalUsd": 59.9}}
    ] * 2
    path = tmp_path / "race.json"
    path.write_text(json.dumps(doc))
    argv = ["run", str(path), "--agent", f"{AGENTS}:says_its_trial", "--concurrency", "20"]
    argv += ["--store", f"sqlite:///{tmp_path}/s.db", "--events", str(tmp_path / "e.jsonl")]
    result = CliRunner().invoke(main, [*argv, "--quiet"])
    assert result.exit_code == 0, result.output
    docs = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
    called = [d["payload"] for d in docs if d["type"] == "agent.tool-called"]
    assert len(called) == 80
    assert {c.get("transport") for c in called} == {"mcp"}
    assert all(c["inputs"]["trial"] == c["x-openwop-eval"]["trial"] for c in called)
    steps = sorted((c["inputs"]["trial"], c["inputs"]["step"]) for c in called)
    assert steps == [(trial, step) for trial in range(40) for step in range(2)]
