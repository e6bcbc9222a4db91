"""``--agent 'mcp:COMMAND'``: an agent that gets its tools over MCP (the official Python
SDK's client, over Streamable HTTP) is graded through the tool boundary like any other — a
good path passes, a skipped step, a forbidden call and a call no fixture answers fail with
the reason in the table — and the trial's servers refuse what is not theirs."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner, Result
from mcp import Client
from mcp.shared.exceptions import MCPError

from openwop_eval.agents.base import TrialContext
from openwop_eval.agents.mcp import TrialTools
from openwop_eval.agents.mcp.hub import MAX_BODY_BYTES, McpHub
from openwop_eval.agents.mcp.listing import PERMISSIVE
from openwop_eval.agents.tool_catalog import ToolSpec
from openwop_eval.cli.main import main
from openwop_eval.runner.failures import failure
from tests.mcp_servers.refunds import suite
from tests.mcp_servers.runs import calls, run_case

AGENT = Path(__file__).with_name("sdk_agent.py")


def run(tmp: Path, case: str, *how: str) -> Result:
    return run_case(tmp, case, f"{sys.executable} {AGENT} " + (" ".join(how) or "{mcp_config}"))


def test_a_good_path_over_mcp_passes_and_every_call_is_recorded(tmp_path: Path) -> None:
    result = run(tmp_path, "good")
    assert result.exit_code == 0, result.output
    events = calls(tmp_path, "good")
    assert [kind for kind, _ in events].count("agent.tool-called") == 4  # 2 trials × 2 calls
    docs = [json.loads(line) for line in (tmp_path / "good.jsonl").read_text().splitlines()]
    called = [d["payload"] for d in docs if d["type"] == "agent.tool-called"]
    assert {c.get("transport") for c in called} == {"mcp"}  # the protocol's name for the path


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("skipped-step", "crm:lookup-order"),
        ("forbidden", "accounts:delete"),
        ("unanswered", "crm:lookup-customer"),
    ],
)
def test_a_wrong_path_over_mcp_fails_with_the_reason(
    tmp_path: Path, case: str, reason: str
) -> None:
    result = run(tmp_path, case)
    assert result.exit_code == 1, result.output
    assert reason in result.output


def test_the_combined_server_serves_every_tool_as_server_dot_name(tmp_path: Path) -> None:
    result = run(tmp_path, "good", "--combined")
    assert result.exit_code == 0, result.output


class Port:
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def call(self, tool: str, args: object, transport: str | None = None) -> object:
        self.seen.append(tool)
        return {"ok": True}


def test_a_trials_servers_answer_only_with_its_token_and_only_while_it_lasts() -> None:
    async def play() -> tuple[list[str], str, str]:
        hub = await asyncio.to_thread(McpHub.shared)
        port = Port()
        context = TrialContext("t", 0, {}, tool_names=("crm:lookup-order",))
        trial = TrialTools.of(context.tool_names, port, asyncio.get_running_loop())
        with hub.serving(trial) as servers:
            url = servers.server_url("crm")
            async with Client(url) as client:
                await client.call_tool("lookup-order", {})
            forged = url.replace(servers.base.rsplit("/", 1)[1], "not-a-token")
            refused = await refusal(forged)
        ended = await refusal(url)
        return port.seen, refused, ended

    seen, refused, ended = asyncio.run(play())
    assert seen == ["crm:lookup-order"]
    assert "no trial is served at this address" in refused
    assert "no trial is served at this address" in ended


async def refusal(url: str) -> str:
    """The protocol error the client got (the SDK raises it inside an exception group)."""
    try:
        async with Client(url) as client:
            await client.call_tool("lookup-order", {})
    except BaseException as exc:
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        if isinstance(exc, MCPError):
            return str(exc)
        raise
    raise AssertionError("the call was answered")


HOSTILE = [
    (b"{not json", 400),
    (b"[1, 2]", 400),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "no/such-method", "params": {}}', 200),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 5}}', 200),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"x": "'
     + b"y" * MAX_BODY_BYTES + b'"}}', 413),
]  # fmt: skip
"""Requests no trial may record: each answered with its HTTP status, a JSON-RPC error."""


def test_hostile_requests_are_protocol_errors_and_record_nothing() -> None:
    async def play() -> tuple[list[int], list[bool], list[str]]:
        hub = await asyncio.to_thread(McpHub.shared)
        port = Port()
        trial = TrialTools.of(("crm:a",), port, asyncio.get_running_loop())
        headers = {"Accept": "application/json, text/event-stream"}
        headers["Content-Type"] = "application/json"
        with hub.serving(trial) as servers:
            async with httpx.AsyncClient() as client:
                answers = [
                    await client.post(servers.server_url("crm"), content=body, headers=headers)
                    for body, _ in HOSTILE
                ]
        errors = [a.status_code >= 400 or "error" in a.json() for a in answers]
        return [a.status_code for a in answers], errors, port.seen

    statuses, errors, seen = asyncio.run(play())
    assert statuses == [status for _, status in HOSTILE]
    assert all(errors)
    assert seen == []


def test_an_agent_that_exits_early_fails_its_trial_with_its_status_and_stderr(
    tmp_path: Path,
) -> None:
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(suite("good", count=1)))
    failing = "import sys; sys.stderr.write('cannot open ./crm_server.py'); sys.exit(3)"
    command = f'mcp:{sys.executable} -c "{failing}"'
    argv = ["run", str(path), "--agent", command, "--store", f"sqlite:///{tmp_path}/s.db"]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 1, result.output
    assert "exited with code 3" in result.output
    assert "cannot open ./crm_server.py" in result.output


def test_an_exception_group_is_told_by_its_leaf() -> None:
    group = ExceptionGroup(
        "unhandled errors in a TaskGroup",
        [ExceptionGroup("inner", [FileNotFoundError("./crm_server.py")]), ValueError("x")],
    )
    assert failure(group).error == "FileNotFoundError: ./crm_server.py (and 1 more)"
    assert failure(ValueError("plain")).error == "ValueError: plain"


def test_a_forbidden_tool_no_fixture_answers_is_listed_and_its_call_gated(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    doc = suite("forbidden", count=1)
    answers = doc["tasks"][0]["fixtures"]["toolResponses"]
    doc["tasks"][0]["fixtures"]["toolResponses"] = [
        a for a in answers if a["tool"] != "accounts:delete"
    ]
    path.write_text(json.dumps(doc))
    argv = ["run", str(path), "--agent", f"mcp:{sys.executable} {AGENT} {{mcp_config}}"]
    report = tmp_path / "report.json"
    argv += ["--store", f"sqlite:///{tmp_path}/s.db", "--report", str(report)]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 1, result.output
    (trial,) = json.loads(report.read_text())["tasks"][0]["trials"]
    assert "delete not listed" not in json.dumps(trial["output"])  # offered, as in production
    assert trial["output"]["listed"]["accounts"] == {"delete": [None, dict(PERMISSIVE)]}


def test_a_stream_or_session_request_is_405_and_no_address_is_404() -> None:
    async def play() -> list[int]:
        hub = await asyncio.to_thread(McpHub.shared)
        trial = TrialTools.of(("crm:a",), Port(), asyncio.get_running_loop())
        with hub.serving(trial) as servers:
            async with httpx.AsyncClient(timeout=10) as client:
                urls = [servers.server_url("crm"), servers.url, servers.url.replace("/t/", "/t/x")]
                headers = {"Accept": "text/event-stream"}
                got = [(await client.get(url, headers=headers)).status_code for url in urls]
                got.append((await client.delete(servers.url)).status_code)
                for elsewhere in (f"{servers.base}/other", f"{servers.url}/extra"):
                    got.append((await client.post(elsewhere, json={})).status_code)
        return got

    assert asyncio.run(play()) == [405, 405, 405, 405, 404, 404]


REGION = {
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
}
"""A tool's input schema that routes argument ``region`` in an ``Mcp-Param-Region`` header."""


def test_a_call_whose_param_header_disagrees_with_its_arguments_is_refused_unrecorded() -> None:
    async def play() -> tuple[list[tuple[int, str]], list[str]]:
        hub = await asyncio.to_thread(McpHub.shared)
        port = Port()
        specs = {"crm:route": ToolSpec(parameters=REGION)}
        trial = TrialTools.of((), port, asyncio.get_running_loop(), specs)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        body["params"] = {"name": "route", "arguments": {"region": "eu"}, "_meta": MODERN_META}
        got = []
        with hub.serving(trial) as servers:
            async with httpx.AsyncClient(timeout=10) as client:
                for region in ("us", "eu"):
                    headers = {**MODERN_HEADERS, "Mcp-Name": "route", "Mcp-Param-Region": region}
                    answer = await client.post(
                        servers.server_url("crm"), json=body, headers=headers
                    )
                    got.append((answer.status_code, json.dumps(answer.json())))
        return got, port.seen

    (refused, served), seen = asyncio.run(play())
    assert refused[0] == 400
    assert "Mcp-Param-Region" in refused[1]
    assert served[0] == 200
    assert '"error"' not in served[1]
    assert seen == ["crm:route"]


MODERN_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
"""A request of protocol revision 2026-07-28: self-contained, its version in a header and in
``_meta``."""
