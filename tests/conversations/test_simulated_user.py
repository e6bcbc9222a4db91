"""An LLM plays the user through the fake OpenAI-compatible endpoint: what it is sent, how it
stops, and every way it can fail — each an error of kind user-simulator, never a pass and
never the agent's failure."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openwop_eval import run_suite
from openwop_eval.files.suites import parse_suite
from openwop_eval.llm.chat import Backoff
from openwop_eval.store import Store
from openwop_eval.users import UserPlayers
from tests.conversations.suites import CAREFUL, TASK, suite
from tests.fakes.openai_server import FakeEndpoint, Reply, Sleeps, completion, serve
from tests.runner.conftest import write

PERSONA = "A traveller in a hurry, secret-persona-7"
GOAL = "Get rebooked on the 9 am flight, secret-goal-9"


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    with serve() as fake:
        yield fake


def _task(max_turns: int = 4, seed: int | None = 11) -> dict[str, Any]:
    task = copy.deepcopy(TASK)
    simulator: dict[str, Any] = {"model": "openai:user-model", "persona": PERSONA, "goal": GOAL}
    if seed is not None:
        simulator["seed"] = seed
    task["x-openwop-eval"]["conversation"] = {
        "maxTurns": max_turns,
        "user": {"simulator": simulator},
        "turns": TASK["x-openwop-eval"]["conversation"]["turns"],
    }
    return task


def _run(tmp_path: Path, endpoint: FakeEndpoint, task: dict[str, Any], **extra: Any) -> Any:
    loaded = parse_suite(suite(task, **extra))
    agent = write(tmp_path / "agent.py", CAREFUL)
    users = UserPlayers(base_url=endpoint.url, api_key="sk-user", backoff=Backoff(0, 0, Sleeps()))
    store = Store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    return run_suite(loaded, f"{agent}:agent", store=store, users=users), store


def test_a_simulated_user_plays_until_it_writes_its_stop_marker(
    tmp_path: Path, endpoint: FakeEndpoint
) -> None:
    endpoint.script(completion("Yes, the 9 am one please."), completion("Thanks! ###STOP###"))
    result, _ = _run(tmp_path, endpoint, _task())
    assert result.summary["passed"] is True
    assert len(endpoint.requests) == 2
    first, second = (seen.body for seen in endpoint.requests)
    assert first["model"] == "user-model"
    assert first["seed"] == 11
    system = first["messages"][0]
    assert system["role"] == "system"
    assert PERSONA in system["content"]
    assert GOAL in system["content"]
    # the roles are turned around: the agent speaks as the simulator's user
    assert [m["role"] for m in first["messages"][1:]] == ["assistant", "user"]
    assert first["messages"][1]["content"].startswith("My flight AB123")
    assert [m["role"] for m in second["messages"][1:]] == [
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert endpoint.requests[0].headers["authorization"] == "Bearer sk-user"


def test_each_trial_offsets_the_seed_by_its_index(tmp_path: Path, endpoint: FakeEndpoint) -> None:
    endpoint.respond = lambda seen: completion(
        "###STOP###" if len(seen.body["messages"]) > 3 else "Yes, the 9 am one please."
    )
    result, _ = _run(tmp_path, endpoint, _task(), trials={"count": 3})
    assert result.summary["passed"] is True
    assert sorted({seen.body["seed"] for seen in endpoint.requests}) == [11, 12, 13]


def test_a_user_that_never_stops_runs_the_agent_out_of_turns(
    tmp_path: Path, endpoint: FakeEndpoint
) -> None:
    endpoint.respond = lambda seen: completion("And one more thing…")
    result, _ = _run(tmp_path, endpoint, _task(max_turns=3))
    task = result.summary["tasks"][0]
    assert result.summary["passed"] is False
    assert task["gatedScore"] == 0
    assert len(endpoint.requests) == 3  # asked once after each of the agent's 3 replies
    grade = result.grade
    trial = grade.tasks[0].trials[0]
    assert trial.outcome == "failed"
    assert not trial.user_simulator
    assert [r.rule for r in trial.reasons][-1] == "turns-exhausted"


@pytest.mark.parametrize(
    ("replies", "says"),
    [
        ([Reply(401, '{"error": "bad key"}')], "HTTP 401"),
        ([Reply(500, "down")] * 3, "failed 3 times"),
        ([completion("   ")], "empty"),
        ([completion(None)], "no text"),
        ([completion("x" * 20_001)], "20001 characters"),
        ([Reply(200, "this is not a completion")] * 3, "failed 3 times"),
    ],
    ids=["refused", "server-errors", "blank", "no-text", "oversized", "garbage"],
)
def test_a_failing_simulator_is_a_user_simulator_error_apart_from_the_agent(
    tmp_path: Path, endpoint: FakeEndpoint, replies: list[Reply], says: str
) -> None:
    endpoint.script(*replies)
    result, store = _run(tmp_path, endpoint, _task())
    assert result.summary["passed"] is False
    grade = result.grade
    task = grade.tasks[0]
    assert task.user_simulator == 1
    trial = task.trials[0]
    assert trial.outcome == "errored"
    assert trial.user_simulator
    assert not trial.infrastructure
    reason = trial.reasons[0]
    assert reason.rule == "user-simulator"
    assert says in reason.message
    assert [r.rule for r in result.gate.reasons] == ["user-simulator-errors"]
    # content-free where the protocol says so: no persona, goal or message in eval.* events
    for event in store.iter_events(result.run_id):
        if event["type"].startswith(("eval.", "run.")):
            text = str(event["payload"])
            assert "secret-persona" not in text
            assert "secret-goal" not in text


def test_a_simulated_user_without_a_model_is_refused_before_the_run(
    tmp_path: Path, endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENWOP_EVAL_USER_MODEL", "OPENWOP_EVAL_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    task = _task()
    task["x-openwop-eval"]["conversation"]["user"]["simulator"]["model"] = "openai:"
    with pytest.raises(Exception, match="simulated user has no model"):
        _run(tmp_path, endpoint, task)
    assert endpoint.requests == []


def test_run_exits_3_when_the_simulated_user_fails(
    tmp_path: Path, endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from openwop_eval.cli.main import main

    endpoint.script(Reply(403, "{}"))
    monkeypatch.setenv("OPENWOP_EVAL_USER_BASE_URL", endpoint.url)
    path = write(tmp_path / "suite.json", suite(_task()))
    agent = write(tmp_path / "agent.py", CAREFUL)
    store = f"sqlite:///{tmp_path / 'store.sqlite'}"
    ran = CliRunner().invoke(
        main, ["run", str(path), "--agent", f"{agent}:agent", "--store", store]
    )
    assert ran.exit_code == 3, ran.output
    assert "1 conversation(s) ended because the simulated user failed" in ran.stderr


def test_a_simulated_user_that_never_answers_is_bounded_by_its_timeout(
    tmp_path: Path, endpoint: FakeEndpoint
) -> None:
    endpoint.script(*[Reply(hang=True)] * 3)
    loaded = parse_suite(suite(_task()))
    agent = write(tmp_path / "agent.py", CAREFUL)
    users = UserPlayers(base_url=endpoint.url, backoff=Backoff(0, 0, Sleeps()), timeout=0.2)
    store = Store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    result = run_suite(loaded, f"{agent}:agent", store=store, users=users)
    trial = result.grade.tasks[0].trials[0]
    assert trial.user_simulator
    assert "failed 3 times" in trial.reasons[0].message
    assert "Timeout" in trial.reasons[0].message
    assert len(endpoint.requests) == 3
