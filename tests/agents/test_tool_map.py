"""``run --tool-map FILE``: an agent whose tools have their own names is graded under the
suite's, the map file being the one ``grade --map`` reads; and a ``file.py:function`` agent
imports the modules beside it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from openwop_eval.cli.main import main

AGENT = "tests.agents.renamed_agent:agent"
LOOKUP = ["lookup_order", {"orderId": "A-1001"}]
REFUND = ["refund", {"orderId": "A-1001"}]
MAP = {
    "traces": {"trace-1": {"taskId": "refund", "trial": 0}},  # grade's; run reads only tools
    "tools": {"lookup_order": "crm:lookup-order", "refund": "payments:refund"},
}


def suite(calls: list[list[Any]]) -> dict[str, Any]:
    return {
        "suiteId": "acme.evals.renamed",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 1},
        "trials": {"count": 1},
        "tasks": [
            {
                "taskId": "refund",
                "input": {"calls": calls},
                "expected": {
                    "kind": "golden",
                    "match": {"strategy": "contains", "value": "refunded"},
                    "trajectory": {
                        "steps": [{"tool": "crm:lookup-order"}, {"tool": "payments:refund"}],
                        "order": "in-order",
                    },
                },
                "fixtures": {
                    "toolResponses": [
                        {"tool": "crm:lookup-order", "response": {"totalUsd": 59.9}},
                        {"tool": "payments:refund", "response": {"status": "refunded"}},
                    ]
                },
            }
        ],
    }


def run(tmp: Path, calls: list[list[Any]], *options: str, agent: str = AGENT) -> Result:
    path = tmp / "suite.json"
    path.write_text(json.dumps(suite(calls)))
    events = tmp / "events.jsonl"
    argv = ["run", str(path), "--agent", agent, "--store", f"sqlite:///{tmp}/s.db"]
    return CliRunner().invoke(main, [*argv, "--events", str(events), *options])


def called(tmp: Path) -> list[str]:
    docs = [json.loads(line) for line in (tmp / "events.jsonl").read_text().splitlines()]
    return [d["payload"]["toolName"] for d in docs if d["type"] == "agent.tool-called"]


def test_the_map_renames_each_call_to_the_suites_name(tmp_path: Path) -> None:
    (tmp_path / "map.json").write_text(json.dumps(MAP))
    result = run(tmp_path, [LOOKUP, REFUND], "--tool-map", str(tmp_path / "map.json"))
    assert result.exit_code == 0, result.output
    assert called(tmp_path) == ["crm:lookup-order", "payments:refund"]


def test_the_map_renames_a_wrong_path_too_and_it_fails(tmp_path: Path) -> None:
    (tmp_path / "map.json").write_text(json.dumps(MAP))
    result = run(tmp_path, [REFUND, LOOKUP], "--tool-map", str(tmp_path / "map.json"))
    assert result.exit_code == 1, result.output
    assert called(tmp_path) == ["payments:refund", "crm:lookup-order"]


def test_without_the_map_the_agents_names_miss(tmp_path: Path) -> None:
    result = run(tmp_path, [LOOKUP, REFUND])
    assert result.exit_code == 1, result.output
    assert called(tmp_path) == ["lookup_order"]  # the miss failed the trial closed


def test_a_map_that_cannot_be_used_is_a_located_usage_error(tmp_path: Path) -> None:
    (tmp_path / "map.yaml").write_text("tools:\n  lookup_order: ''\n  refund: 3\n")
    result = run(tmp_path, [LOOKUP], "--tool-map", str(tmp_path / "map.yaml"))
    assert result.exit_code == 2, result.output
    assert f"{tmp_path / 'map.yaml'}:2 $.tools.lookup_order" in result.output
    assert f"{tmp_path / 'map.yaml'}:3 $.tools.refund" in result.output


def test_a_map_needs_an_agent(tmp_path: Path) -> None:
    (tmp_path / "map.json").write_text(json.dumps(MAP))
    argv = ["run", "--resume", "run-x", "--tool-map", str(tmp_path / "map.json")]
    result = CliRunner().invoke(main, [*argv, "--store", f"sqlite:///{tmp_path}/s.db"])
    assert result.exit_code == 2, result.output
    assert "--tool-map renames the tools of an --agent" in result.output


def test_a_file_agent_imports_the_modules_beside_it(tmp_path: Path) -> None:
    folder = Path(__file__).with_name("neighbours")
    agent = f"{folder / 'eval_refund.py'}:agent"
    before = list(sys.path)
    report = tmp_path / "report.json"
    result = run(tmp_path, [], "--report", str(report), agent=agent)
    assert result.exit_code == 1, result.output  # it answered, and skipped every step
    (trial,) = json.loads(report.read_text())["tasks"][0]["trials"]
    assert trial["output"] == "refunded"  # what the neighbour module holds
    assert sys.path == before  # the folder was on the path while the file loaded, no longer
