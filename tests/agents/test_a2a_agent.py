"""``--agent a2a:URL`` against a real A2A 1.0 server (the official ``a2a-sdk``'s Starlette
routes under uvicorn on loopback, with a small AgentExecutor): a good agent passes a golden
suite through ``run``, whether it streams or is polled; a wrong answer fails; a task that
ends failed is the agent's error (exit 1); an unreachable URL or a server answering garbage is
infrastructure (exit 3), never a pass; a conversation is one A2A context; an agent that takes
the trial's MCP servers (the tools extension) is graded on the path it takes, and one that
does not is warned of before the run; a host runs ``agent = "a2a:URL"`` from its config."""

from __future__ import annotations

import asyncio
import copy
import json
import socket
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentSkill,
    Part,
)
from click.testing import CliRunner, Result
from google.protobuf import json_format
from mcp import Client
from openwop_client.wire_id import project_id
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from openwop_eval.agents import AgentSpecError, resolve_agent
from openwop_eval.agents.a2a import HEADERS_ENV, TOKEN_ENV, TOOLS_EXTENSION, A2AAgent
from openwop_eval.agents.a2a import agent as a2a_agent
from openwop_eval.agents.a2a import http as a2a_http
from openwop_eval.cli.main import main
from openwop_eval.server.catalog import Catalog
from openwop_eval.server.config import AgentConfig, ConfigError, load_config
from tests.conversations.suites import TASK as REBOOKING
from tests.hosts import Host, api, wait_for
from tests.server.test_agent_stall import start_host

TOKEN = "a2a-token-0123456789"
ANSWERS = {"capital of France?": "Paris", "capital of Italy?": "Rome"}


@dataclass
class Seen:
    """What one message the server was sent carried."""

    context_id: str
    task_id: str
    text: str
    data: Any
    metadata: dict[str, Any]
    headers: dict[str, str]


Play = Callable[[RequestContext, TaskUpdater], Awaitable[None]]


class Executor(AgentExecutor):
    """Starts (or continues) the task, records what it was sent, and lets ``play`` finish it."""

    def __init__(self, play: Play) -> None:
        self.play = play
        self.seen: list[Seen] = []
        self.started: list[str] = []
        self.cancelled: list[str] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        if context.current_task is None:
            await event_queue.enqueue_event(task)
            self.started.append(task.id)
        data = [
            json_format.MessageToDict(p.data) for p in context.message.parts if p.data.ByteSize()
        ]
        self.seen.append(
            Seen(
                context.message.context_id,
                context.message.task_id,
                context.get_user_input(),
                data[0] if data else None,
                json_format.MessageToDict(context.message.metadata),
                context.call_context.state["headers"],
            )
        )
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        await self.play(context, updater)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None
        self.cancelled.append(context.task_id)
        await TaskUpdater(event_queue, context.task_id, context.context_id or "").cancel()


async def answer(updater: TaskUpdater, text: str) -> None:
    """The answer in two streamed chunks of one artifact, then the task completed."""
    await updater.add_artifact([Part(text=text[:2])], artifact_id="answer")
    await updater.add_artifact([Part(text=text[2:])], artifact_id="answer", append=True)
    await updater.complete()


async def knows_capitals(context: RequestContext, updater: TaskUpdater) -> None:
    await answer(updater, ANSWERS.get(context.get_user_input(), "no idea"))


async def always_london(context: RequestContext, updater: TaskUpdater) -> None:
    await answer(updater, "London")


async def crashes(context: RequestContext, updater: TaskUpdater) -> None:
    await updater.failed(updater.new_agent_message([Part(text="the model is overloaded")]))


@dataclass
class Served:
    url: str
    executor: Executor

    @property
    def seen(self) -> list[Seen]:
        return self.executor.seen


def card(url: str, *, streaming: bool, tools: bool = False) -> AgentCard:
    extensions = [AgentExtension(uri=TOOLS_EXTENSION, description="MCP tools")] if tools else []
    return AgentCard(
        name="capitals",
        description="Knows capitals.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=f"{url}/rpc", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=streaming, extensions=extensions),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="capitals", name="capitals", description="c", tags=["geo"])],
    )


@contextmanager
def listening(make_app: Callable[[str], Any]) -> Iterator[str]:
    """The app ``make_app`` makes for its URL, under uvicorn on a loopback port of its own, in
    a thread, until the block ends."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(make_app(url), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])))
    thread.start()
    try:
        while not server.started:
            assert thread.is_alive(), "the A2A server did not start"
            thread.join(0.01)
        yield url
    finally:
        server.should_exit = True
        thread.join(10)


@contextmanager
def served(play: Play, *, streaming: bool = True, tools: bool = False) -> Iterator[Served]:
    """An A2A server built with the SDK whose executor plays ``play``."""
    executor = Executor(play)

    def app(url: str) -> Starlette:
        agent_card = card(url, streaming=streaming, tools=tools)
        handler = DefaultRequestHandler(
            agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=agent_card
        )
        routes = [*create_agent_card_routes(agent_card), *create_jsonrpc_routes(handler, "/rpc")]
        return Starlette(routes=routes)

    with listening(app) as url:
        yield Served(url, executor)


def golden(*tasks: tuple[str, Any, str]) -> dict[str, Any]:
    return {
        "suiteId": "acme.evals.a2a",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 1},
        "tasks": [
            {
                "taskId": task_id,
                "input": given,
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": value}},
            }
            for task_id, given, value in tasks
        ],
    }


CAPITALS = golden(
    ("france", "capital of France?", "Paris"),
    ("italy", {"message": "capital of Italy?"}, "Rome"),
)


@dataclass
class Run:
    result: Result
    report: dict[str, Any]

    @property
    def errors(self) -> list[str]:
        return [t.get("error") or "" for task in self.report["tasks"] for t in task["trials"]]


def run(tmp: Path, suite: dict[str, Any], agent: str, *more: str) -> Run:
    path, report = tmp / "suite.json", tmp / "report.json"
    path.write_text(json.dumps(suite))
    argv = ["run", str(path), "--agent", agent, "--store", f"sqlite:///{tmp}/s.db"]
    argv += ["--report", str(report), "--quiet", *more]
    result = CliRunner().invoke(main, argv, catch_exceptions=False)
    return Run(result, json.loads(report.read_text()))


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "polled"])
def test_a_good_agent_passes_a_golden_suite_through_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streaming: bool
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(HEADERS_ENV, '{"X-Tenant": "acme"}')
    with served(knows_capitals, streaming=streaming) as agent:
        ran = run(tmp_path, CAPITALS, f"a2a:{agent.url}")
    assert ran.result.exit_code == 0, ran.result.output
    assert sorted(seen.text for seen in agent.seen) == ["capital of France?", "capital of Italy?"]
    for seen in agent.seen:
        assert seen.headers["a2a-version"] == "1.0"
        assert seen.headers["authorization"] == f"Bearer {TOKEN}"
        assert seen.headers["x-tenant"] == "acme"
        assert seen.metadata == {}  # no tools offered: the card does not take them
    assert len({seen.context_id for seen in agent.seen}) == 2  # a context of its own per trial


def test_an_input_that_is_no_string_and_has_no_message_goes_as_a_data_part(
    tmp_path: Path,
) -> None:
    async def echoes_the_city(context: RequestContext, updater: TaskUpdater) -> None:
        await answer(updater, f"city {executor.seen[-1].data['city']}")

    with served(echoes_the_city) as agent:
        executor = agent.executor
        ran = run(
            tmp_path, golden(("data", {"city": "Oslo", "n": 2}, "city Oslo")), f"a2a:{agent.url}"
        )
    assert ran.result.exit_code == 0, ran.result.output
    assert agent.seen[0].data == {"city": "Oslo", "n": 2}
    assert agent.seen[0].text == ""


def test_a_wrong_answer_fails(tmp_path: Path) -> None:
    with served(always_london) as agent:
        ran = run(tmp_path, CAPITALS, f"a2a:{agent.url}")
    assert ran.result.exit_code == 1, ran.result.output
    assert ran.report["passed"] is False
    assert ran.errors == ["", ""]  # graded, not errored: the answer was wrong


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "polled"])
def test_a_task_that_ends_failed_is_the_agents_error(tmp_path: Path, streaming: bool) -> None:
    with served(crashes, streaming=streaming) as agent:
        ran = run(tmp_path, CAPITALS, f"a2a:{agent.url}")
    assert ran.result.exit_code == 1, ran.result.output
    assert "infrastructure" not in ran.result.output
    assert all(
        e == "A2AAgentError: the task ended failed: the model is overloaded" for e in ran.errors
    )


def test_an_unreachable_agent_is_infrastructure_never_a_pass(tmp_path: Path) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()  # nothing listens there now
    ran = run(tmp_path, CAPITALS, f"a2a:{url}")
    assert ran.result.exit_code == 3, ran.result.output
    assert f"could not reach {url}" in ran.result.output
    assert ran.report["passed"] is False


def raw_server(url: str, well_known: str | None, rpc: Any) -> Starlette:
    """A server that is no A2A SDK's: its card (``well_known``, else a good one) and its
    JSON-RPC endpoint's every answer (``rpc``: a body, or a JSON-RPC error member) as given."""

    def agent_card(request: Request) -> Response:
        if well_known is not None:
            return PlainTextResponse(well_known)
        found = card(url, streaming=False)
        return Response(json_format.MessageToJson(found), media_type="application/json")

    async def answer(request: Request) -> Response:
        if isinstance(rpc, str):
            return PlainTextResponse(rpc)
        sent = await request.json()
        body = {"jsonrpc": "2.0", "id": sent["id"], "error": rpc}
        return Response(json.dumps(body), media_type="application/json")

    return Starlette(
        routes=[
            Route("/.well-known/agent-card.json", agent_card),
            Route("/rpc", answer, methods=["POST"]),
        ]
    )


@pytest.mark.parametrize(
    ("well_known", "rpc", "told"),
    [
        ("<html>not a card</html>", "", "reading the Agent Card"),
        (None, "<html>502 from a proxy</html>", "sending the task"),
        (None, '{"jsonrpc": "2.0", "id": 1, "result": {"neither": 1}}', "sending the task"),
        ("{" + '"name": "x", ' * 200 + '"version": "1"}', "", "went past 1000 bytes"),
    ],
    ids=["card", "answer", "not-a2a", "too-large"],
)
def test_a_server_answering_garbage_is_infrastructure_never_a_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, well_known: str | None, rpc: str, told: str
) -> None:
    monkeypatch.setattr(a2a_http, "MAX_A2A_RESPONSE_BYTES", 1000)
    with listening(lambda url: raw_server(url, well_known, rpc)) as url:
        ran = run(tmp_path, CAPITALS, f"a2a:{url}")
    assert ran.result.exit_code == 3, ran.result.output
    assert f"could not reach {url}" in ran.result.output
    assert ran.report["passed"] is False
    assert all(e.startswith("A2AUnreachableError: ") and told in e for e in ran.errors), ran.errors


def test_a_json_rpc_error_the_agent_answers_is_its_own_error(tmp_path: Path) -> None:
    error = {"code": -32603, "message": "the model crashed"}
    with listening(lambda url: raw_server(url, None, error)) as url:
        ran = run(tmp_path, CAPITALS, f"a2a:{url}")
    assert ran.result.exit_code == 1, ran.result.output
    assert all(
        e == "A2AAgentError: the agent answered an error: InternalError: the model crashed"
        for e in ran.errors
    ), ran.errors


def test_a_task_still_working_after_the_last_poll_is_the_agents_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(a2a_agent, "MAX_A2A_POLLS", 3)
    monkeypatch.setattr(a2a_agent, "FIRST_POLL_S", 0.0)
    release = threading.Event()

    async def never_ends(context: RequestContext, updater: TaskUpdater) -> None:
        await asyncio.to_thread(release.wait)

    with served(never_ends, streaming=False) as agent:
        try:
            ran = run(tmp_path, golden(("slow", "capital of France?", "Paris")), f"a2a:{agent.url}")
        finally:
            release.set()
    assert ran.result.exit_code == 1, ran.result.output
    assert ran.errors == ["A2AAgentError: the task was still under way after 3 polls"]


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "polled"])
def test_a_task_the_trial_leaves_under_way_is_cancelled_at_the_agent(
    tmp_path: Path, streaming: bool
) -> None:
    release = threading.Event()

    async def never_ends(context: RequestContext, updater: TaskUpdater) -> None:
        await asyncio.to_thread(release.wait)

    with served(never_ends, streaming=streaming) as agent:
        try:
            suite = golden(("slow", "capital of France?", "Paris"))
            ran = run(tmp_path, suite, f"a2a:{agent.url}", "--timeout", "1")
        finally:
            release.set()
    assert ran.result.exit_code == 1, ran.result.output
    assert ran.errors == ["timed out after 1 s"]
    assert len(agent.executor.started) == 1
    assert agent.executor.cancelled == agent.executor.started


def test_a_conversation_keeps_one_context_each_user_turn_a_new_message(tmp_path: Path) -> None:
    async def counts_turns(context: RequestContext, updater: TaskUpdater) -> None:
        turns = sum(1 for seen in executor.seen if seen.context_id == context.context_id)
        said = context.get_user_input()
        await answer(updater, f"turn {turns or 1}: {said}")

    task = {
        "taskId": "two-turns",
        "input": {"message": "hello"},
        "expected": {"kind": "golden", "match": {"strategy": "contains", "value": "bye"}},
        "x-openwop-eval": {
            "conversation": {"maxTurns": 2, "user": {"script": ["bye"]}},
        },
    }
    suite = {**golden(), "tasks": [task]}
    with served(counts_turns) as agent:
        executor = agent.executor
        ran = run(tmp_path, suite, f"a2a:{agent.url}")
    assert ran.result.exit_code == 0, ran.result.output
    first, second = agent.seen
    assert (first.text, second.text) == ("hello", "bye")
    assert first.context_id == second.context_id  # the agent's, sent back with the next turn
    assert first.task_id != second.task_id  # a new task in it: the first one completed


def test_a_turn_that_asks_for_input_is_answered_in_its_own_task(tmp_path: Path) -> None:
    async def asks_first(context: RequestContext, updater: TaskUpdater) -> None:
        if len(executor.seen) == 1:
            question = updater.new_agent_message([Part(text="Which flight, 9 am or noon?")])
            await updater.requires_input(question)
        else:
            await answer(updater, f"booked: {context.get_user_input()}")

    task = {
        "taskId": "asks",
        "input": "rebook me",
        "expected": {"kind": "golden", "match": {"strategy": "contains", "value": "booked: 9"}},
        "x-openwop-eval": {
            "conversation": {"maxTurns": 2, "user": {"script": ["9 am please"]}},
        },
    }
    with served(asks_first) as agent:
        executor = agent.executor
        ran = run(tmp_path, {**golden(), "tasks": [task]}, f"a2a:{agent.url}")
    assert ran.result.exit_code == 0, ran.result.output
    first, second = agent.seen
    assert second.task_id == first.task_id  # the answer goes to the task that asked
    assert second.context_id == first.context_id


@pytest.mark.parametrize(
    ("spec", "env", "problem"),
    [
        ("a2a:", {}, "base URL"),
        ("a2a:ftp://host", {}, "base URL"),
        ("a2a:https://user:tök@host", {}, "without credentials"),
        ("a2a:https://host/agent?key=tök", {}, "without credentials"),
        ("a2a:http://127.0.0.1:1", {HEADERS_ENV: "[1]"}, "JSON object of strings"),
        ("a2a:http://127.0.0.1:1", {HEADERS_ENV: "{"}, "is not JSON"),
        (
            "a2a:http://127.0.0.1:1",
            {HEADERS_ENV: '{"Authorization": "x"}', TOKEN_ENV: "t"},
            "give one",
        ),
        ("a2a:http://127.0.0.1:1", {TOKEN_ENV: "tök"}, "not ASCII"),
    ],
)
def test_a_spec_or_header_that_cannot_be_used_is_a_usage_error_never_sent(
    monkeypatch: pytest.MonkeyPatch, spec: str, env: dict[str, str], problem: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(AgentSpecError, match=problem) as raised:
        resolve_agent(spec)
    assert "tök" not in str(raised.value)


def test_without_the_sdk_installed_the_spec_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "a2a.client", None)  # as if it could not be imported
    with pytest.raises(AgentSpecError, match=r"pip install 'openwop-eval\[a2a\]'"):
        resolve_agent("a2a:http://127.0.0.1:1")


def test_the_agents_repr_never_shows_its_credentials() -> None:
    agent = A2AAgent.from_url("http://127.0.0.1:1", {TOKEN_ENV: TOKEN})
    assert TOKEN not in repr(agent)
    assert agent.agent_id == "a2a:http://127.0.0.1:1"


# --- the tool path: the trial's MCP servers, through the tools extension --------------------

REBOOK = copy.deepcopy(REBOOKING)
del REBOOK["x-openwop-eval"]  # one input, one reply: the path is the task's trajectory
REBOOK["input"] = {"message": "My flight AB123 was cancelled, can you rebook me?"}


def books(*calls: tuple[str, str, dict[str, Any]]) -> Play:
    """An agent that makes ``calls`` ((server, tool, args)) over the MCP servers its message's
    metadata names, then says it rebooked."""

    async def play(context: RequestContext, updater: TaskUpdater) -> None:
        servers = context.message.metadata[TOOLS_EXTENSION]["mcpServers"]
        for server, tool, args in calls:
            async with Client(servers[server]["url"]) as client:
                await client.call_tool(tool, args)
        await answer(updater, "You are rebooked on AB200.")

    return play


RIGHT = books(
    ("bookings", "get", {"flight": "AB123"}),
    ("flights", "search", {"from": "AB123"}),
    ("bookings", "rebook", {"flight": "AB200"}),
)
WRONG = books(
    ("bookings", "get", {"flight": "AB123"}),
    ("payments", "charge", {"amount": 100}),
    ("bookings", "rebook", {"flight": "AB200"}),
)


def test_an_agent_on_the_right_path_over_the_trials_mcp_servers_passes(tmp_path: Path) -> None:
    with served(RIGHT, tools=True) as agent:
        ran = run(tmp_path, {**golden(), "tasks": [REBOOK]}, f"a2a:{agent.url}")
    assert ran.result.exit_code == 0, ran.result.output
    (seen,) = agent.seen
    trial = ran.report["tasks"][0]["trials"][0]
    assert [c["tool"] for c in trial["calls"]] == [
        "bookings:get",
        "flights:search",
        "bookings:rebook",
    ]
    assert seen.headers["a2a-extensions"] == TOOLS_EXTENSION
    assert set(seen.metadata[TOOLS_EXTENSION]["mcpServers"]) >= {"bookings", "flights"}
    assert "warning" not in ran.result.output


def test_an_agent_on_a_wrong_path_fails_though_its_answer_is_right(tmp_path: Path) -> None:
    with served(WRONG, tools=True) as agent:
        ran = run(tmp_path, {**golden(), "tasks": [REBOOK]}, f"a2a:{agent.url}")
    assert ran.result.exit_code == 1, ran.result.output
    trial = ran.report["tasks"][0]["trials"][0]
    assert (trial["outputScore"], trial["gatingScore"]) == (1, 0)
    assert [r["rule"] for r in trial["reasons"]] == ["forbidden", "missing-step"]
    assert [c["tool"] for c in trial["calls"]] == [
        "bookings:get",
        "payments:charge",
        "bookings:rebook",
    ]


def test_an_agent_without_a_tool_path_is_warned_of_and_its_trajectory_fails_closed(
    tmp_path: Path,
) -> None:
    async def answers_only(context: RequestContext, updater: TaskUpdater) -> None:
        await answer(updater, "You are rebooked on AB200.")

    with served(answers_only) as agent:
        ran = run(tmp_path, {**golden(), "tasks": [REBOOK]}, f"a2a:{agent.url}")
    assert ran.result.exit_code == 1, ran.result.output
    assert "no tool path" in ran.result.output
    assert agent.seen[0].metadata == {}
    trial = ran.report["tasks"][0]["trials"][0]
    assert (trial["outputScore"], trial["gatingScore"], trial["calls"]) == (1, 0, [])


# --- the host: `agent = "a2a:URL"` in its configuration --------------------------------------


def _host_run(client: httpx.Client, host: Host, agent_id: str) -> dict[str, Any]:
    body = {"mode": "eval", "evalSuiteRef": "acme.evals.a2a@1.0.0", "agentId": agent_id}
    made = client.post("/runs", json=body)
    assert made.status_code == 201, made.text
    path = f"/runs/{project_id(made.json()['runId'])}"
    wait_for(lambda: client.get(path).json()["status"] == "completed", "the run", log=host.log)
    summary: dict[str, Any] = client.get(f"{path}/eval-summary").json()
    return summary


def test_a_host_runs_a2a_agents_from_its_configuration_each_with_its_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "the-hosts-token")
    monkeypatch.setenv("PLANNER_TOKEN", "the-planners-token")
    monkeypatch.setenv("PLANNER_HEADERS", '{"X-Tenant": "planning"}')
    with served(knows_capitals) as agent:
        host = start_host(
            tmp_path,
            f"sqlite:///{tmp_path / 'host.sqlite'}",
            f'[agents."acme.remote"]\nagent = "a2a:{agent.url}"\n'
            f'[agents."acme.planner"]\nagent = "a2a:{agent.url}"\n'
            'api_key_env = "PLANNER_TOKEN"\nheaders_env = "PLANNER_HEADERS"\n',
            {"suites/capitals.json": json.dumps(CAPITALS)},
        )
        try:
            with api(host) as client:
                remote = _host_run(client, host, "acme.remote")
                sent_by_remote = list(agent.seen)
                planner = _host_run(client, host, "acme.planner")
        finally:
            host.stop()
    assert remote["passed"] is True, remote
    assert planner["passed"] is True, planner
    assert sorted(s.text for s in sent_by_remote) == ["capital of France?", "capital of Italy?"]
    by_planner = agent.seen[len(sent_by_remote) :]
    assert {s.headers["authorization"] for s in sent_by_remote} == {"Bearer the-hosts-token"}
    assert {s.headers["authorization"] for s in by_planner} == {"Bearer the-planners-token"}
    assert {s.headers["x-tenant"] for s in by_planner} == {"planning"}
    assert all("x-tenant" not in s.headers for s in sent_by_remote)


def test_an_a2a_agents_credential_variables_are_checked_when_the_host_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "host.toml"
    path.write_text(
        '[agents."acme.planner"]\nagent = "a2a:http://127.0.0.1:1"\n'
        'api_key_env = "PLANNER_TOKEN"\nheaders_env = "PLANNER_HEADERS"\n'
    )
    monkeypatch.delenv("PLANNER_TOKEN", raising=False)
    monkeypatch.setenv("PLANNER_HEADERS", "{}")
    with pytest.raises(ConfigError, match=r"acme.planner: api_key_env: \$PLANNER_TOKEN is not set"):
        Catalog(load_config(path))
    monkeypatch.setenv("PLANNER_TOKEN", "t")
    monkeypatch.setenv("PLANNER_HEADERS", "[1]")
    with pytest.raises(ConfigError, match="PLANNER_HEADERS must be a JSON object"):
        Catalog(load_config(path))
    with pytest.raises(ValidationError, match="headers_env: for an a2a:URL agent only"):
        AgentConfig(agent="scripted:a.json", headers_env="PLANNER_HEADERS")
    with pytest.raises(ValidationError, match="api_key_env: for an openai:MODEL or a2a:URL"):
        AgentConfig(agent="cmd:agent", api_key_env="PLANNER_TOKEN")
