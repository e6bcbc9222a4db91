"""Real runs of a small suite with Python agents, kept in a SQLite store in ``tmp_path``,
and the command line to compare them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from openwop_eval import run_suite
from openwop_eval.agents import AsyncTools
from openwop_eval.agents.python import PythonAgent
from openwop_eval.cli.main import main
from openwop_eval.reports.model import report_text, result_report
from openwop_eval.store import Store
from tests.compare.builders import SUITE_ID


def suite(tasks: int = 8, trials: int = 2) -> dict[str, Any]:
    """Every task answers "ok" after crm:lookup, and must never call accounts:delete."""
    fixtures = {
        "toolResponses": [
            {"tool": "crm:lookup", "response": {"found": True}},
            {"tool": "accounts:delete", "response": {"deleted": True}},
        ]
    }
    return {
        "suiteId": SUITE_ID,
        "version": "1.0.0",
        "modes": ["golden"],
        "trials": {"count": trials},
        "tasks": [
            {
                "taskId": f"t{i}",
                "input": {"task": f"t{i}"},
                "expected": {
                    "kind": "golden",
                    "match": {"strategy": "exact", "value": "ok"},
                    "trajectory": {
                        "steps": [{"tool": "crm:lookup"}],
                        "forbidden": ["accounts:delete"],
                    },
                },
                "fixtures": fixtures,
            }
            for i in range(tasks)
        ],
    }


def agent(**behaviour: str) -> PythonAgent:
    """Right on every task but those named: ``wrong_answer`` (the right path, output
    "nope") or ``wrong_path`` (output "ok", through the forbidden accounts:delete)."""

    async def act(task_input: dict[str, Any], tools: AsyncTools) -> str:
        how = behaviour.get(task_input["task"], "right")
        await tools.call("crm:lookup", {})
        if how == "wrong_path":
            await tools.call("accounts:delete", {})
        return "nope" if how == "wrong_answer" else "ok"

    return PythonAgent(act, "test.compare.agent")


@dataclass(frozen=True)
class Run:
    """A completed run: its id in the store and the three files a side can be read from."""

    run_id: str
    summary: dict[str, Any]
    summary_file: Path
    report_file: Path
    events_file: Path

    def side(self, form: str) -> str:
        return {
            "run-id": self.run_id,
            "summary": str(self.summary_file),
            "report": str(self.report_file),
            "events": str(self.events_file),
        }[form]


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.sqlite'}"


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = Store(store_url)
    yield opened
    opened.close()


@pytest.fixture(autouse=True)
def _no_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture
def run(tmp_path: Path, store: Store) -> Callable[..., Run]:
    counter = iter(range(1000))

    def execute(doc: dict[str, Any], with_agent: PythonAgent) -> Run:
        name = f"run{next(counter)}"
        path = tmp_path / f"{name}-suite.json"
        path.write_text(json.dumps(doc))
        events = tmp_path / f"{name}.jsonl"
        with events.open("w", encoding="utf-8") as sink:
            result = run_suite(path, with_agent, store=store, events=sink)
        summary_file = tmp_path / f"{name}.json"
        summary_file.write_text(json.dumps(result.summary))
        report_file = tmp_path / f"{name}-report.json"
        report_file.write_text(report_text(result_report(result, trials=True)))
        return Run(result.run_id, result.summary, summary_file, report_file, events)

    return execute


@dataclass(frozen=True)
class Invoked:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(store_url: str) -> Callable[..., Invoked]:
    def invoke(*args: str) -> Invoked:
        result = CliRunner().invoke(main, ["compare", *args, "--store", store_url])
        assert "Traceback" not in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        return Invoked(result.exit_code, result.stdout, result.stderr)

    return invoke
