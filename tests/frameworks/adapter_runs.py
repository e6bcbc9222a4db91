"""The refunds cases (``tests/mcp_servers/refunds.py``) for an agent built on a framework:
the task's input names each call by the framework's own tool name, ``--tool-map`` renames it
to the suite's, and the run goes through the command line as a team would run it
(``--agent module:object``, no glue).

The agent's module builds its model when it is imported, on the endpoint ``$MODEL_URL``
names: :func:`scripted_model` serves a scripted one (``tests/mcp_servers/scripted_model.py``)
and has the module imported afresh on it."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from openwop_eval.agents.base import AsyncTools, ToolCallError, TrialContext
from openwop_eval.cli.main import main
from openwop_eval.core import JSON
from tests.fakes.openai_server import FakeEndpoint, Reply, serve
from tests.mcp_servers import scripted_model as script
from tests.mcp_servers.refunds import suite

MODEL_URL = "OPENWOP_TEST_MODEL_URL"
"""Where an agent's module reads its model's endpoint when it is imported."""
LIVE_TOOLS = Path(__file__).with_name("payments_down.py")
WRONG_PATHS = [
    ("skipped-step", "step 1 (crm:lookup-order) was never called"),
    ("forbidden", "called forbidden tool accounts:delete"),
]
"""The refunds cases that take a wrong path, with the reason the run must give."""


@contextmanager
def scripted_model(monkeypatch: pytest.MonkeyPatch, module: str) -> Iterator[FakeEndpoint]:
    """The scripted model on a fake endpoint; ``module`` is imported afresh on it."""
    with serve() as fake:
        fake.respond = script.respond
        monkeypatch.setenv(MODEL_URL, fake.url)
        monkeypatch.delitem(sys.modules, module, raising=False)
        yield fake


def framework_suite(
    case: str, names: Mapping[str, str], first: tuple[list[Any], ...] = (), live: bool = False
) -> dict[str, Any]:
    """``case``'s suite, its calls named by ``names`` (suite tool → framework tool), after
    the calls ``first`` (a handoff, say); ``live``: no fixtures, the live tools answer."""
    doc = suite(case)
    task = doc["tasks"][0]
    calls = [[server, names[tool], args] for server, tool, args in task["input"]["calls"]]
    task["input"]["calls"] = [*first, *calls]
    if live:
        del task["fixtures"]
    return doc


def run_framework_case(
    tmp: Path, case: str, agent: str, names: Mapping[str, str], *options: str, **suite: Any
) -> Result:
    """``openwop-eval run`` of ``case`` with ``--agent AGENT`` and a tool map from ``names``;
    events go to ``tmp/CASE.jsonl`` (read by ``tests/mcp_servers/runs.py``), the JSON report
    to ``tmp/CASE.report.json``."""
    path, tool_map = tmp / f"{case}.json", tmp / "tool-map.json"
    path.write_text(json.dumps(framework_suite(case, names, **suite)))
    renames = {name: f"{_server(tool)}:{tool}" for tool, name in names.items()}
    tool_map.write_text(json.dumps({"tools": renames}))
    argv = ["run", str(path), "--agent", agent, "--tool-map", str(tool_map), "--quiet"]
    argv += ["--store", f"sqlite:///{tmp}/s.db", "--events", str(tmp / f"{case}.jsonl")]
    argv += ["--report", str(tmp / f"{case}.report.json"), *options]
    return CliRunner().invoke(main, argv)


def _server(tool: str) -> str:
    return {"refund": "payments", "delete": "accounts"}.get(tool, "crm")


def report_trials(tmp: Path, case: str) -> list[dict[str, Any]]:
    """The trials of the run's JSON report."""
    report = json.loads((tmp / f"{case}.report.json").read_text())
    return [trial for task in report["tasks"] for trial in task["trials"]]


def tool_results(model: FakeEndpoint) -> list[str]:
    """The tool outputs the model was sent, in the order it was sent them."""
    seen: list[str] = []
    for request in model.requests:
        for message in request.body["messages"]:
            text = str(message["content"])
            if message["role"] == "tool" and text not in seen:
                seen.append(text)
    return seen


def offered(model: FakeEndpoint) -> list[list[dict[str, Any]]]:
    """The distinct tool lists the requests offered the model, in order."""
    lists: list[list[dict[str, Any]]] = []
    for request in model.requests:
        tools = request.body.get("tools", [])
        if tools not in lists:
            lists.append(tools)
    return lists


def answer(content: Any) -> Reply:
    """A full chat completion (as strict clients validate one) whose message is ``content``
    (JSON text unless a string)."""
    text = content if isinstance(content, str) else json.dumps(content)
    return _completion({"role": "assistant", "content": text}, "stop")


def asking(tool: str, args: dict[str, Any]) -> Reply:
    """A full chat completion asking for one call of ``tool``."""
    call = {"id": "call_x", "type": "function"}
    call["function"] = {"name": tool, "arguments": json.dumps(args)}
    return _completion({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls")


def _completion(message: dict[str, Any], finish: str) -> Reply:
    body = {
        "id": "chatcmpl-adapter",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": script.MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    return Reply(body=json.dumps(body))


class RecordingPort:
    """A tool boundary that answers from ``answers`` and keeps each call."""

    def __init__(self, answers: Mapping[str, JSON]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, JSON]] = []

    async def call(
        self, tool: str, args: Mapping[str, JSON] | None, transport: str | None = None
    ) -> JSON:
        self.calls.append((tool, dict(args or {})))
        if tool not in self.answers:
            raise ToolCallError(f"{tool} failed: no such tool")
        return self.answers[tool]

    def tools(self, task_input: JSON = None) -> AsyncTools:
        return AsyncTools(self, TrialContext("task", 0, task_input))
