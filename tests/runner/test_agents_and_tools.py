"""Every agent form, live tools, recorded fixtures, budgets, judges and the CI outputs."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.runner.conftest import Ran, write


def golden_suite(**extra: Any) -> dict[str, Any]:
    task = {
        "taskId": "refund",
        "input": {"orderId": "A-1"},
        "expected": {
            "kind": "golden",
            "match": {"strategy": "exact", "value": "refunded"},
            "trajectory": {
                "steps": [{"tool": "crm:lookup", "args": {"id": "A-1"}}, {"tool": "pay:refund"}]
            },
        },
    }
    task.update(extra.pop("task", {}))
    return {
        "suiteId": "test.openwop.evals.agents",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 1},
        "tasks": [task],
        **extra,
    }


FIXTURES = {
    "toolResponses": [
        {"tool": "crm:lookup", "response": {"total": 10}},
        {"tool": "pay:refund", "response": {"status": "ok"}},
    ]
}

SYNC_AGENT = """
def agent(input, tools):
    order = tools.call("crm:lookup", {"id": input["orderId"]})
    result = tools.call("pay:refund", {"id": input["orderId"], "amount": order["total"]})
    return "refunded" if result["status"] == "ok" else "failed"
"""

CMD_AGENT = r"""
import json, sys
start = json.loads(sys.stdin.readline())
def call(tool, args, n):
    print(json.dumps({"type": "tool-call", "id": f"c{n}", "tool": tool, "args": args}), flush=True)
    return json.loads(sys.stdin.readline())
order = call("crm:lookup", {"id": start["input"]["orderId"]}, 1)
paid = call("pay:refund", {"id": "A-1", "amount": order["result"]["total"]}, 2)
print("working", file=sys.stderr)
print(json.dumps({"type": "final", "output": "refunded" if paid["ok"] else "no",
                  "costUsd": 0.25, "latencyMs": 42}), flush=True)
"""


def test_a_sync_python_agent(tmp_path: Path, run_cli: Callable[..., Ran]) -> None:
    suite = write(tmp_path / "s.json", golden_suite(task={"fixtures": FIXTURES}))
    agent = write(tmp_path / "a.py", SYNC_AGENT)
    ran = run_cli(str(suite), "--agent", f"{agent}:agent")
    assert ran.exit_code == 0, ran.stderr
    assert ran.report is not None
    assert ran.report["agentId"] == f"{agent}:agent"
    called = [e["payload"] for e in ran.events if e["type"] == "agent.tool-called"]
    assert [(c["toolName"], c["inputs"]) for c in called] == [
        ("crm:lookup", {"id": "A-1"}),
        ("pay:refund", {"id": "A-1", "amount": 10}),
    ]


def test_a_subprocess_agent_speaking_json_lines(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    suite = write(tmp_path / "s.json", golden_suite(task={"fixtures": FIXTURES}))
    agent = write(tmp_path / "agent.py", CMD_AGENT)
    ran = run_cli(str(suite), "--agent", f"cmd:{sys.executable} {agent}")
    assert ran.exit_code == 0, ran.output
    assert ran.summary is not None
    assert ran.summary["tasks"][0]["costUsd"] == 0.25
    assert ran.summary["tasks"][0]["latencyMs"] == 42


def test_a_subprocess_that_breaks_the_protocol_errors(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    suite = write(tmp_path / "s.json", golden_suite(task={"fixtures": FIXTURES}))
    agent = write(tmp_path / "agent.py", "print('hello, not json')\n")
    ran = run_cli(str(suite), "--agent", f"cmd:{sys.executable} {agent}")
    assert ran.exit_code == 1
    assert ran.report is not None
    trial = ran.report["tasks"][0]["trials"][0]
    assert trial["outcome"] == "errored"
    assert "not JSON: 'hello, not json'" in trial["error"]


def test_live_tools_answer_tasks_without_fixtures(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    suite = write(tmp_path / "s.json", golden_suite())
    agent = write(tmp_path / "a.py", SYNC_AGENT)
    tools = write(
        tmp_path / "tools.py",
        (
            "async def refund(args):\n    return {'status': 'ok'}\n"
            "TOOLS = {'crm:lookup': lambda args: {'total': 7}, 'pay:refund': refund}\n"
        ),
    )
    ran = run_cli(str(suite), "--agent", f"{agent}:agent", "--tools", str(tools))
    assert ran.exit_code == 0, ran.output
    returned = [e["payload"] for e in ran.events if e["type"] == "agent.tool-returned"]
    assert [r["outcome"] for r in returned] == [{"total": 7}, {"status": "ok"}]


def test_fixtures_never_fall_through_to_live_tools(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    only_lookup = {"toolResponses": [{"tool": "crm:lookup", "response": {"total": 10}}]}
    suite = write(tmp_path / "s.json", golden_suite(task={"fixtures": only_lookup}))
    agent = write(tmp_path / "a.py", SYNC_AGENT)
    tools = write(tmp_path / "tools.py", "TOOLS = {'pay:refund': lambda args: {'status': 'ok'}}\n")
    ran = run_cli(str(suite), "--agent", f"{agent}:agent", "--tools", str(tools))
    assert ran.exit_code == 1
    assert ran.report is not None
    assert ran.report["tasks"][0]["trials"][0]["outcome"] == "failed-closed"


def test_recorded_fixtures_replay_a_live_run(tmp_path: Path, run_cli: Callable[..., Ran]) -> None:
    suite = write(tmp_path / "s.json", golden_suite())
    agent = write(tmp_path / "a.py", SYNC_AGENT)
    tools = write(
        tmp_path / "tools.py",
        "TOOLS = {'crm:lookup': lambda a: {'total': 7},"
        " 'pay:refund': lambda a: {'status': 'ok'}}\n",
    )
    live = run_cli(str(suite), "--agent", f"{agent}:agent", "--tools", str(tools))
    assert live.exit_code == 0
    replayed = run_cli(
        str(suite), "--agent", f"{agent}:agent", "--fixtures-from", str(live.dir / "events.jsonl")
    )
    assert replayed.exit_code == 0, replayed.output
    returned = [
        e["payload"]["outcome"] for e in replayed.events if e["type"] == "agent.tool-returned"
    ]
    assert returned == [{"total": 7}, {"status": "ok"}]


def test_a_call_the_recording_cannot_answer_misses(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    suite = write(tmp_path / "s.json", golden_suite(task={"fixtures": FIXTURES}))
    agent = write(tmp_path / "a.py", SYNC_AGENT)
    first = run_cli(str(suite), "--agent", f"{agent}:agent")
    changed = write(
        tmp_path / "b.py", SYNC_AGENT.replace('{"id": input["orderId"]}', '{"id": "B-2"}')
    )
    again = run_cli(
        str(suite),
        "--agent",
        f"{changed}:agent",
        "--fixtures-from",
        f"refund={first.dir / 'events.jsonl'}",
    )
    assert again.exit_code == 1
    assert again.report is not None
    assert again.report["tasks"][0]["trials"][0]["reasons"][0]["rule"] == "fixture-miss"


def test_the_cost_budget_stops_new_trials(tmp_path: Path, run_cli: Callable[..., Ran]) -> None:
    suite = golden_suite(task={"fixtures": FIXTURES}, trials={"count": 4})
    suite["thresholds"]["maxCostUsd"] = 0.5
    path = write(tmp_path / "s.json", suite)
    agent = write(tmp_path / "agent.py", CMD_AGENT)
    ran = run_cli(str(path), "--agent", f"cmd:{sys.executable} {agent}", "--concurrency", "1")
    assert ran.exit_code == 1
    assert len(ran.scored()) == 3  # 0.25 + 0.25 + 0.25 > 0.5: the fourth never starts
    assert ran.report is not None
    outcomes = [t["outcome"] for t in ran.report["tasks"][0]["trials"]]
    assert outcomes == ["passed", "passed", "passed", "not-run"]
    assert "maxCostUsd was exceeded" in ran.stderr


def test_rubric_tasks_with_a_scripted_judge(tmp_path: Path, run_cli: Callable[..., Ran]) -> None:
    suite = golden_suite()
    suite["tasks"][0]["expected"] = {
        "kind": "rubric",
        "rubric": [
            {"criterion": "polite", "weight": 0.5},
            {"criterion": "cites the policy", "weight": 0.5},
        ],
    }
    suite["thresholds"]["passScore"] = 0.7
    path = write(tmp_path / "s.json", suite)
    agent = write(tmp_path / "a.json", {"agentId": "demo", "default": [{"output": "Sure."}]})
    judge = write(tmp_path / "j.json", {"default": [[1, 0.5]]})
    ran = run_cli(str(path), "--agent", f"scripted:{agent}", "--judge", f"scripted:{judge}")
    assert ran.exit_code == 0, ran.output
    assert ran.summary is not None
    assert ran.summary["tasks"][0]["score"] == 0.75
    assert ran.report is not None
    assert [v["met"] for v in ran.report["tasks"][0]["trials"][0]["verdicts"]] == [1, 0.5]


def test_rubric_tasks_need_a_judge(tmp_path: Path, run_cli: Callable[..., Ran]) -> None:
    suite = golden_suite()
    suite["tasks"][0]["expected"] = {"kind": "rubric", "rubric": [{"criterion": "c", "weight": 1}]}
    path = write(tmp_path / "s.json", suite)
    agent = write(tmp_path / "a.json", {"agentId": "demo", "default": [{"output": "x"}]})
    ran = run_cli(str(path), "--agent", f"scripted:{agent}")
    assert ran.exit_code == 2
    assert "choose a judge" in ran.stderr


def test_junit_and_markdown(tmp_path: Path, run_cli: Callable[..., Ran]) -> None:
    suite = write(tmp_path / "s.json", golden_suite(task={"fixtures": FIXTURES}))
    agent = write(
        tmp_path / "a.json",
        {
            "agentId": "demo",
            "default": [{"output": "refunded", "toolCalls": [{"tool": "pay:refund", "args": {}}]}],
        },
    )
    ran = run_cli(
        str(suite),
        "--agent",
        f"scripted:{agent}",
        "--junit",
        str(tmp_path / "j.xml"),
        "--markdown",
        str(tmp_path / "m.md"),
    )
    assert ran.exit_code == 1
    root = ET.parse(tmp_path / "j.xml").getroot()
    suite_node = root.find("testsuite")
    assert suite_node is not None
    assert suite_node.get("failures") == "2"  # the task, and the suite gate
    failure = root.find(".//testcase[@name='refund']/failure")
    assert failure is not None
    assert "gated score 0 is below passScore 1" in (failure.get("message") or "")
    text = (tmp_path / "m.md").read_text()
    assert "❌ did not pass" in text
    assert "trial 1: step 1 (crm:lookup) was never called" in text


def test_invalid_inputs_exit_two_before_anything_runs(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    suite = write(tmp_path / "s.json", golden_suite())
    bad_suite = write(tmp_path / "bad.json", {"suiteId": "x"})
    assert run_cli(str(bad_suite), "--agent", "x:y").exit_code == 2
    assert run_cli(str(suite), "--agent", "no_such_module_xyz:agent").exit_code == 2
    assert run_cli(str(suite), "--agent", f"scripted:{tmp_path / 'none.json'}").exit_code == 2
    ran = run_cli(str(suite), "--agent", "scripted:" + str(write(tmp_path / "a.json", {})))
    assert ran.exit_code == 2
    assert "agentId" in ran.stderr
    assert json.loads(json.dumps(ran.events)) == []


def test_agent_specs_are_recorded_with_absolute_paths(tmp_path: Path) -> None:
    from openwop_eval.agents import absolute_spec

    assert absolute_spec("scripted:a.json", tmp_path) == f"scripted:{tmp_path / 'a.json'}"
    assert absolute_spec("agents/x.py:run", tmp_path) == f"{tmp_path / 'agents/x.py'}:run"
    assert absolute_spec("pkg.module:run", tmp_path) == "pkg.module:run"
    assert absolute_spec("cmd:python a.py:x", tmp_path) == "cmd:python a.py:x"
    assert absolute_spec("openai:gpt-4.1", tmp_path) == "openai:gpt-4.1"
