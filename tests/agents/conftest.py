"""The fake chat-completions endpoint, and running a suite against an ``openai:`` agent."""

from __future__ import annotations

import asyncio
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from openwop_eval.agents import OpenAIAgent
from openwop_eval.files.suites import parse_suite
from openwop_eval.llm.chat import Backoff
from openwop_eval.runner import RunOptions, run_suite_async
from openwop_eval.runner.result import RunResult
from openwop_eval.store import Store
from tests.fakes.openai_server import FakeEndpoint, Sleeps, endpoint_fixture

API_KEY = "sk-agent-0123456789abcdef"


endpoint = pytest.fixture(endpoint_fixture, name="endpoint")


@dataclass
class Ran:
    result: RunResult
    events: list[dict[str, Any]]

    @property
    def trial(self) -> Any:
        """The grade of the first trial of the first task."""
        return self.result.grade.tasks[0].trials[0]

    def diagnostics(self, task: str | None = None, trial: int = 0) -> dict[str, Any]:
        task = task or self.result.grade.tasks[0].task_id
        return self.result.diagnostics[(task, trial)]

    def calls(self) -> list[tuple[str, Any]]:
        return [
            (e["payload"]["toolName"], e["payload"]["inputs"])
            for e in self.events
            if e["type"] == "agent.tool-called"
        ]

    def scored(self) -> list[dict[str, Any]]:
        return [e["payload"] for e in self.events if e["type"] == "eval.scored"]


def make_agent(endpoint: FakeEndpoint, sleeps: Sleeps | None = None, **options: Any) -> OpenAIAgent:
    options.setdefault("api_key", API_KEY)
    backoff = Backoff(0.5, 30.0, sleeps or Sleeps())
    return OpenAIAgent("agent-model", base_url=endpoint.url, backoff=backoff, **options)


def run_suite(doc: dict[str, Any], agent: Any, tmp_path: Path) -> Ran:
    """Run ``doc`` one trial at a time (so scripted replies meet trials in order)."""
    store = Store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    sink = io.StringIO()
    options = RunOptions(concurrency=1, timeout_s=30)
    try:
        result = asyncio.run(
            run_suite_async(parse_suite(doc), agent, store=store, options=options, events=sink)
        )
    finally:
        store.close()
    return Ran(result, [json.loads(line) for line in sink.getvalue().splitlines()])
