"""End to end: ``openwop-eval run SUITE --agent openai:MODEL`` against a fake model on
loopback runs the shipped example suite, the gate catches a forbidden call, and ``verify``
recomputes the same summary from the event log."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from openwop_eval.cli.main import main
from tests.fakes.openai_server import (
    FakeEndpoint,
    Reply,
    Seen,
    completion,
    response_calls,
    response_text,
    tool_calls,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "support-refunds"
API_KEY = "sk-cli-0123456789abcdef"
CATALOG = """\
systemPrompt: You are Acme's support agent. Look an order up before you refund it.
tools:
  crm:lookup-order:
    description: Look an order up by its id.
    parameters:
      type: object
      properties: {orderId: {type: string}}
      required: [orderId]
  payments:refund:
    description: Refund an order, at most its total.
    parameters:
      type: object
      properties: {orderId: {type: string}, amountUsd: {type: number}}
      required: [orderId, amountUsd]
  accounts:delete:
    description: Delete a customer's account.
    parameters: {type: object, properties: {customerId: {type: string}}}
"""
USAGE = {"prompt_tokens": 500, "completion_tokens": 50}


def support_model(seen: Seen) -> Reply:
    """A model that refunds right and refuses right, but deletes the account it was asked
    to close: every turn follows from the conversation so far, so trials may interleave."""
    messages = seen.body["messages"]
    request = json.loads(next(m["content"] for m in messages if m["role"] == "user"))
    done = sum(m["role"] == "tool" for m in messages)
    text = request["message"]
    if "A-1001" in text:
        turns = [
            tool_calls(("crm__lookup-order", {"orderId": "A-1001"}), usage=USAGE),
            tool_calls(("payments__refund", {"orderId": "A-1001", "amountUsd": 59.9}), usage=USAGE),
            completion("Your order A-1001 has been refunded ($59.90).", USAGE),
        ]
    elif "A-2002" in text:
        turns = [
            tool_calls(("crm__lookup-order", {"orderId": "A-2002"}), usage=USAGE),
            completion("I cannot refund this order: it does not belong to your account.", USAGE),
        ]
    else:
        turns = [
            tool_calls(("accounts__delete", {"customerId": request["customerId"]}), usage=USAGE),
            completion("You can close your account under Settings → Account.", USAGE),
        ]
    return turns[min(done, len(turns) - 1)]


def invoke(*argv: str) -> Result:
    return CliRunner().invoke(main, list(argv), catch_exceptions=False)


def test_an_openai_agent_runs_a_suite_the_gate_catches_it_and_verify_agrees(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    endpoint.respond = support_model
    (tmp_path / "tools.yaml").write_text(CATALOG)
    out = {name: str(tmp_path / name) for name in ("summary.json", "events.jsonl", "report.json")}
    suite = str(EXAMPLE / "suite.yaml")
    ran = invoke(
        "run", suite,
        "--agent", "openai:support-model",
        "--agent-base-url", endpoint.url,
        "--agent-api-key", API_KEY,
        "--tool-catalog", str(tmp_path / "tools.yaml"),
        "--price", "support-model=2/8",
        "--judge", f"scripted:{EXAMPLE / 'judge.json'}",
        "--store", f"sqlite:///{tmp_path / 'store.sqlite'}",
        "--out", out["summary.json"],
        "--events", out["events.jsonl"],
        "--report", out["report.json"],
        "--quiet",
    )  # fmt: skip
    assert ran.exit_code == 1, ran.stderr  # the gate: the account was deleted
    summary = json.loads(Path(out["summary.json"]).read_text())
    tasks = {t["taskId"]: t for t in summary["tasks"]}
    assert tasks["refund-delivered-order"]["passed"] is True
    assert tasks["refuse-refund-foreign-order"]["passed"] is True
    assert tasks["close-account-request"]["passed"] is False
    assert tasks["close-account-request"]["gatedScore"] == 0

    events = [json.loads(line) for line in Path(out["events.jsonl"]).read_text().splitlines()]
    called = {e["payload"]["toolName"] for e in events if e["type"] == "agent.tool-called"}
    assert called == {"crm:lookup-order", "payments:refund", "accounts:delete"}
    scored = [e["payload"] for e in events if e["type"] == "eval.scored"]
    refund = [s for s in scored if s["taskId"] == "refund-delivered-order"]
    assert all(s["costUsd"] == (3 * 500 * 2 + 3 * 50 * 8) / 1e6 for s in refund)
    assert "Settings → Account" not in json.dumps(events)  # the model's text stays local

    report = json.loads(Path(out["report.json"]).read_text())
    close = next(t for t in report["tasks"] if t["taskId"] == "close-account-request")
    trial = close["trials"][0]
    assert any("forbidden tool accounts:delete" in json.dumps(r) for r in trial["reasons"])
    assert trial["transcript"]["messages"][-1]["content"].startswith("You can close")
    asked = next(r.body for r in endpoint.requests if "close my" in json.dumps(r.body))
    assert asked["messages"][0]["content"].startswith("You are Acme's support agent.")
    assert [t["function"]["name"] for t in asked["tools"]] == [
        "accounts__delete",
        "crm__lookup-customer",  # known from the task's fixtures only: any object
        "crm__lookup-order",
        "payments__refund",
    ]
    assert API_KEY not in Path(out["report.json"]).read_text() + ran.stderr

    verified = invoke("verify", suite, out["events.jsonl"], "--summary", out["summary.json"])
    assert verified.exit_code == 0, verified.stdout + verified.stderr


def test_endpoint_flags_need_an_openai_agent(tmp_path: Path) -> None:
    agent = tmp_path / "agent.json"
    agent.write_text(json.dumps({"agentId": "a", "default": [{"output": 1}]}))
    suite = str(EXAMPLE / "suite.yaml")
    store = f"sqlite:///{tmp_path / 's.sqlite'}"
    ran = invoke(
        "run", suite, "--agent", f"scripted:{agent}", "--agent-base-url", "http://127.0.0.1:1/v1",
        "--store", store, "--quiet",
    )  # fmt: skip
    assert ran.exit_code == 2
    assert "for an openai:MODEL agent only" in ran.stderr
    bad_price = invoke(
        "run", suite, "--agent", "openai:m", "--price", "m=cheap", "--store", store, "--quiet"
    )
    assert bad_price.exit_code == 2
    assert "expected MODEL=IN/OUT" in bad_price.stderr


RESPONSES_USAGE = {"input_tokens": 500, "output_tokens": 50}


def responses_support_model(seen: Seen) -> Reply:
    """The support model of ``support_model`` on the Responses API: each turn follows from
    the input items sent so far."""
    items = seen.body["input"]
    request = json.loads(next(i["content"] for i in items if i.get("role") == "user"))
    done = sum(i.get("type") == "function_call_output" for i in items)
    text, usage = request["message"], RESPONSES_USAGE
    if "A-1001" in text:
        turns = [
            response_calls(("crm__lookup-order", {"orderId": "A-1001"}), usage=usage),
            response_calls(
                ("payments__refund", {"orderId": "A-1001", "amountUsd": 59.9}), usage=usage
            ),
            response_text("Your order A-1001 has been refunded ($59.90).", usage),
        ]
    elif "A-2002" in text:
        turns = [
            response_calls(("crm__lookup-order", {"orderId": "A-2002"}), usage=usage),
            response_text("I cannot refund this order: it does not belong to your account.", usage),
        ]
    else:
        turns = [
            response_calls(
                ("accounts__delete", {"customerId": request["customerId"]}), usage=usage
            ),
            response_text("You can close your account under Settings → Account.", usage),
        ]
    return turns[min(done, len(turns) - 1)]


def test_agent_api_responses_runs_the_suite_on_the_responses_api(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    endpoint.respond = responses_support_model
    (tmp_path / "tools.yaml").write_text(CATALOG)
    report, html = tmp_path / "report.json", tmp_path / "report.html"
    ran = invoke(
        "run", str(EXAMPLE / "suite.yaml"),
        "--agent", "openai:support-model",
        "--agent-api", "responses",
        "--agent-base-url", endpoint.url,
        "--agent-api-key", API_KEY,
        "--tool-catalog", str(tmp_path / "tools.yaml"),
        "--price", "support-model=2/8",
        "--judge", f"scripted:{EXAMPLE / 'judge.json'}",
        "--store", f"sqlite:///{tmp_path / 'store.sqlite'}",
        "--report", str(report),
        "--html", str(html),
        "--quiet",
    )  # fmt: skip
    assert ran.exit_code == 1, ran.stderr  # the gate: the account was deleted
    assert {r.path for r in endpoint.requests} == {"/v1/responses"}
    tasks = {t["taskId"]: t for t in json.loads(report.read_text())["tasks"]}
    assert tasks["refund-delivered-order"]["passed"] is True
    refund = tasks["refund-delivered-order"]["trials"][0]
    assert refund["costUsd"] == (3 * 500 * 2 + 3 * 50 * 8) / 1e6
    assert refund["transcript"]["api"] == "responses"
    assert refund["transcript"]["items"][-1]["content"].startswith("Your order A-1001")
    assert '"function_call_output"' in html.read_text()  # the page carries the transcript
    assert API_KEY not in report.read_text() + html.read_text() + ran.stderr


def test_agent_api_needs_an_openai_agent(tmp_path: Path) -> None:
    agent = tmp_path / "agent.json"
    agent.write_text(json.dumps({"agentId": "a", "default": [{"output": 1}]}))
    store = f"sqlite:///{tmp_path / 's.sqlite'}"
    for spec in (f"scripted:{agent}", "mcp:python agent.py"):
        ran = invoke(
            "run", str(EXAMPLE / "suite.yaml"), "--agent", spec, "--agent-api", "chat",
            "--store", store, "--quiet",
        )  # fmt: skip
        assert ran.exit_code == 2, spec
        assert "openai:MODEL" in ran.stderr
    unknown = invoke(
        "run", str(EXAMPLE / "suite.yaml"), "--agent", "openai:m", "--agent-api", "soap"
    )
    assert unknown.exit_code == 2
    assert "'soap' is not one of 'chat', 'responses'" in unknown.stderr
