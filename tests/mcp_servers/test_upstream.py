"""Record once, replay hermetically: ``--mcp-upstream`` connects a namespace to a real MCP
server (over Streamable HTTP, or a command over stdio); its calls go through the boundary,
recorded with the server's listing, and ``--fixtures-from`` that log replays the run — the
same listing, the same answers (a server's error included), the same summary — with no
server at all. And ``--mcp-transport stdio`` hands the agent commands instead of URLs."""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from click.testing import CliRunner, Result

from openwop_eval.cli.main import main
from tests.mcp_servers.refunds import suite
from tests.mcp_servers.upstream_server import server

HERE = Path(__file__).parent
AGENT = f"mcp:{sys.executable} {HERE / 'sdk_agent.py'} {{mcp_config}}"
STDIO = f"stdio:{sys.executable} {HERE / 'upstream_server.py'}"


@pytest.fixture(scope="module")
def payments_url() -> Iterator[str]:
    """The payments server over Streamable HTTP on loopback, for the module."""
    app = server("payments").streamable_http_app(stateless_http=True, json_response=True)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    served = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=served.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not served.started and thread.is_alive():
        thread.join(0.01)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    served.should_exit = True
    thread.join(10)


def live_suite(tmp: Path, case: str) -> Path:
    """The case's suite with no fixtures: the upstreams answer."""
    doc = suite(case)
    for task in doc["tasks"]:
        del task["fixtures"]
    path = tmp / f"{case}.json"
    path.write_text(json.dumps(doc))
    return path


def run(tmp: Path, suite_path: Path, name: str, *extra: str) -> Result:
    argv = ["run", str(suite_path), "--agent", AGENT, "--store", f"sqlite:///{tmp}/s.db"]
    argv += ["--events", str(tmp / f"{name}.jsonl"), "--out", str(tmp / f"{name}.json")]
    argv += ["--report", str(tmp / f"{name}.report.json")]
    return CliRunner().invoke(main, [*argv, *extra, "--quiet"])


def upstreams(payments_url: str) -> list[str]:
    return [
        "--mcp-upstream", f"crm={STDIO} crm",
        "--mcp-upstream", f"payments={payments_url}",
        "--mcp-upstream", f"accounts={STDIO} accounts",
    ]  # fmt: skip


def timeless(value: Any) -> Any:
    """A summary without its measured latencies (a process takes the time it takes)."""
    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if "latency" not in k.lower()}
    if isinstance(value, list):
        return [timeless(v) for v in value]
    return value


def events(tmp: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp / f"{name}.jsonl").read_text().splitlines()]


def outputs(tmp: Path, name: str) -> list[Any]:
    """What the agent printed, trial by trial (the report's; events hold no output)."""
    report = json.loads((tmp / f"{name}.report.json").read_text())
    return [trial["output"] for task in report["tasks"] for trial in task["trials"]]


@pytest.mark.parametrize("case", ["good", "forbidden", "unanswered"])
def test_a_recorded_run_replays_to_the_same_summary_with_no_server(
    tmp_path: Path, payments_url: str, case: str
) -> None:
    path = live_suite(tmp_path, case)
    recorded = run(tmp_path, path, "recorded", *upstreams(payments_url))
    # unanswered: the real server answers the extra call with its error; in order, it passes
    assert recorded.exit_code == (1 if case == "forbidden" else 0), recorded.output
    replayed = run(tmp_path, path, "replayed", "--fixtures-from", str(tmp_path / "recorded.jsonl"))
    assert replayed.exit_code == recorded.exit_code, replayed.output
    summary = timeless(json.loads((tmp_path / "recorded.json").read_text()))
    assert timeless(json.loads((tmp_path / "replayed.json").read_text())) == summary
    # the agent saw the same: the servers' listing and answers, the server's error included
    assert outputs(tmp_path, "replayed") == outputs(tmp_path, "recorded")


def test_the_recording_holds_the_servers_answers_and_listing(
    tmp_path: Path, payments_url: str
) -> None:
    result = run(tmp_path, live_suite(tmp_path, "unanswered"), "rec", *upstreams(payments_url))
    docs = events(tmp_path, "rec")
    started = [d for d in docs if d["type"] == "agent.invocation-started"]
    listing = started[0]["payload"]["x-openwop-eval"]["toolListing"]
    assert listing["crm:lookup-order"]["description"] == "Look an order up by its id."
    assert listing["payments:refund"]["inputSchema"]["required"] == ["orderId", "amountUsd"]
    returned = [d["payload"] for d in docs if d["type"] == "agent.tool-returned"]
    assert returned[0]["outcome"]["structuredContent"] == {"orderId": "A-1001", "totalUsd": 59.9}
    assert returned[1]["outcome"]["isError"] is True  # the server's own error, answered
    assert "no customer C-42" in json.dumps(returned[1]["outcome"])
    (output,) = {json.dumps(o) for o in outputs(tmp_path, "rec")}  # both trials alike
    listed = json.loads(output)["listed"]
    assert listed["crm"]["lookup-order"][0] == "Look an order up by its id."
    assert result.exit_code == 0  # an extra call, answered, between the steps in order


def test_a_replay_never_goes_live_a_call_it_did_not_record_misses(
    tmp_path: Path, payments_url: str
) -> None:
    recorded = run(tmp_path, live_suite(tmp_path, "good"), "good", *upstreams(payments_url))
    assert recorded.exit_code == 0, recorded.output
    other = live_suite(tmp_path, "unanswered")  # one call more than the recording holds
    doc = json.loads(other.read_text())
    doc["tasks"][0]["taskId"] = "refund-good"
    other.write_text(json.dumps(doc))
    replayed = run(tmp_path, other, "replay", "--fixtures-from", str(tmp_path / "good.jsonl"))
    assert replayed.exit_code == 1
    assert "crm:lookup-customer" in replayed.output


def test_over_stdio_the_agent_starts_each_server_as_a_command(tmp_path: Path) -> None:
    path = tmp_path / "good.json"
    path.write_text(json.dumps(suite("good")))
    result = run(tmp_path, path, "stdio", "--mcp-transport", "stdio")
    assert result.exit_code == 0, result.output
    called = [d for d in events(tmp_path, "stdio") if d["type"] == "agent.tool-called"]
    assert [d["payload"]["toolName"] for d in called[:2]] == ["crm:lookup-order", "payments:refund"]
    failed = run(tmp_path, tmp_path / "good.json", "x", "--mcp-transport", "stdio")
    assert failed.exit_code == 0


def test_the_catalog_describes_what_the_servers_list(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog.json"
    schema = {"type": "object", "properties": {"orderId": {"type": "string"}}}
    described = {"description": "Find an order.", "parameters": schema}
    catalog.write_text(json.dumps({"tools": {"crm:lookup-order": described}}))
    path = tmp_path / "good.json"
    path.write_text(json.dumps(suite("good", count=1)))
    result = run(tmp_path, path, "cat", "--tool-catalog", str(catalog))
    assert result.exit_code == 0, result.output
    (output,) = outputs(tmp_path, "cat")
    assert output["listed"]["crm"]["lookup-order"] == [
        "Find an order.",
        schema,
    ]


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("crm", "expected NAME=URL or NAME=stdio:COMMAND"),
        ("crm:x=http://h/mcp", "without ':' or '.'"),
        ("crm=ftp://h/mcp", "must be http:// or https://"),
        ("crm=stdio:", "stdio: needs a command"),
        (f"crm=stdio:{sys.executable} -c 'raise SystemExit(4)'", "an MCP upstream failed"),
    ],
)
def test_an_upstream_that_cannot_serve_is_a_usage_error(
    tmp_path: Path, flag: str, message: str
) -> None:
    path = live_suite(tmp_path, "good")
    result = run(tmp_path, path, "bad", "--mcp-upstream", flag)
    assert result.exit_code == 2
    assert message in result.output
