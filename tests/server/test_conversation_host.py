"""Conversation suites on the host: `POST /runs` plays them as `run` does, the event stream
carries each turn's messages and calls, the gate reads the whole conversation, and the
simulated users of `[users]` are asked on the configured endpoint (SQLite and PostgreSQL)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from openwop_client.wire_id import project_id

from openwop_eval.server.config import AgentConfig, UsersConfig
from tests.conversations.suites import CAREFUL, HASTY, TASK, suite
from tests.fakes.openai_server import FakeEndpoint, completion, serve
from tests.server.inprocess import AppHost
from tests.server.test_lifecycle import frames

SUITE = "test.openwop.evals.conversations@1.0.0"


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    with serve() as fake:
        yield fake


@pytest.fixture
def conversation_app(
    make_app: Callable[..., AppHost],
    tmp_path: Path,
    endpoint: FakeEndpoint,
    monkeypatch: pytest.MonkeyPatch,
) -> AppHost:
    simulated = copy.deepcopy(TASK)
    simulated["taskId"] = "rebook-simulated"
    simulated["x-openwop-eval"]["conversation"]["user"] = {
        "simulator": {"model": "openai:user-model", "persona": "secret-persona", "goal": "rebook"}
    }
    (tmp_path / "suite.json").write_text(json.dumps(suite(TASK) | {"tasks": [TASK, simulated]}))
    (tmp_path / "careful.py").write_text(CAREFUL)
    (tmp_path / "hasty.py").write_text(HASTY)
    monkeypatch.setenv("TEST_USER_KEY", "sk-simulated")
    return make_app(
        suites=(str(tmp_path / "suite.json"),),
        agents={
            "test.careful": AgentConfig(agent=f"{tmp_path / 'careful.py'}:agent"),
            "test.hasty": AgentConfig(agent=f"{tmp_path / 'hasty.py'}:agent"),
        },
        users=UsersConfig(base_url=endpoint.url, api_key_env="TEST_USER_KEY"),
    )


def _user(endpoint: FakeEndpoint) -> None:
    """The simulated user: chooses the 9 am flight, then is done."""

    def respond(seen: Any) -> Any:
        said = sum(1 for m in seen.body["messages"] if m["role"] == "assistant")
        return completion("Yes, the 9 am one please." if said == 1 else "Thanks ###STOP###")

    endpoint.respond = respond


def test_a_conversation_suite_runs_on_the_host_turn_by_turn(
    conversation_app: AppHost, endpoint: FakeEndpoint
) -> None:
    _user(endpoint)
    run_id = conversation_app.start(
        {"mode": "eval", "evalSuiteRef": SUITE, "agentId": "test.careful"}
    )
    with conversation_app.client() as client:
        with client.stream("GET", f"/runs/{project_id(run_id)}/events") as stream:
            events = list(frames(stream))
        summary = client.get(f"/runs/{project_id(run_id)}/eval-summary").json()
    assert summary["passed"] is True
    messages = [e["payload"] for e in events if e["type"] == "agent.message"]
    by_task: dict[str, list[tuple[str, int]]] = {}
    for m in messages:
        ext = m["x-openwop-eval"]
        by_task.setdefault(ext["taskId"], []).append((m["role"], ext["turn"]))
    turns = [("user", 0), ("assistant", 0), ("user", 1), ("assistant", 1)]
    assert by_task["rebook-after-cancellation"] == [*turns, ("user", 2), ("assistant", 2)]
    assert by_task["rebook-simulated"] == turns  # the simulated user stopped after turn 2
    assert {seen.headers["authorization"] for seen in endpoint.requests} == {"Bearer sk-simulated"}
    content_free = json.dumps([e for e in events if e["type"].startswith(("eval.", "run."))])
    assert "secret-persona" not in content_free
    assert "9 am" not in content_free


def test_the_host_gate_reads_every_turn(conversation_app: AppHost, endpoint: FakeEndpoint) -> None:
    _user(endpoint)
    run_id = conversation_app.run_to_end(SUITE, "test.hasty")
    with conversation_app.client() as client:
        summary = client.get(f"/runs/{project_id(run_id)}/eval-summary").json()
    assert summary["passed"] is False
    assert [(t["score"], t["gatedScore"]) for t in summary["tasks"]] == [(1.0, 0.0), (1.0, 0.0)]


def test_a_simulated_user_without_a_model_is_refused_at_post_runs(
    make_app: Callable[..., AppHost], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENWOP_EVAL_USER_MODEL", "OPENWOP_EVAL_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    task = copy.deepcopy(TASK)
    task["x-openwop-eval"]["conversation"]["user"] = {
        "simulator": {"model": "openai:", "persona": "p", "goal": "g"}
    }
    (tmp_path / "suite.json").write_text(json.dumps(suite(task)))
    (tmp_path / "careful.py").write_text(CAREFUL)
    app = make_app(
        suites=(str(tmp_path / "suite.json"),),
        agents={"test.careful": AgentConfig(agent=f"{tmp_path / 'careful.py'}:agent")},
    )
    body = {"mode": "eval", "evalSuiteRef": SUITE, "agentId": "test.careful"}
    refused = app.request("POST", "/runs", json=body)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"] == "validation_error"
    assert "simulated user has no model" in refused.text
