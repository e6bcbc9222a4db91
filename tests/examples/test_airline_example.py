"""examples/airline run through `run` as its README says, the LLM user played by the fake
OpenAI-compatible endpoint: the careful agent passes; the hasty one ends every conversation
with the right words and fails on the turn where it acted too soon."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import FakeEndpoint, Reply, Seen, completion, serve
from tests.runner.conftest import Ran

EXAMPLE = Path(__file__).resolve().parents[2] / "examples/airline"
SEAT_TASK = "change-to-window-seat"


def _user(seen: Seen) -> Reply:
    """The simulated user: picks 12A when asked which seat, else ends the conversation (the
    agent's replies reach it as the "user" role of its own chat)."""
    said = seen.body["messages"][-1]
    assert said["role"] == "user"
    return completion("12A, please." if "Which" in said["content"] else "Thanks! ###STOP###")


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEndpoint]:
    with serve() as fake:
        fake.respond = _user
        monkeypatch.setenv("OPENWOP_EVAL_USER_BASE_URL", fake.url)
        monkeypatch.setenv("OPENWOP_EVAL_USER_MODEL", "user-model")
        monkeypatch.setenv("OPENWOP_EVAL_USER_API_KEY", "sk-user")
        yield fake


def _run(run_cli: Callable[..., Ran], agent: str) -> Ran:
    """The README's command for ``agent``, run (with the test's store and outputs)."""
    shown = f"run examples/airline/suite.yaml --agent examples/airline/agent.py:{agent}"
    assert shown in (EXAMPLE / "README.md").read_text()
    return run_cli(str(EXAMPLE / "suite.yaml"), "--agent", f"{EXAMPLE / 'agent.py'}:{agent}")


def _ended(ran: Ran) -> dict[str, list[Any]]:
    """Per task, how each trial's conversation ended ({turns, ended})."""
    ended: dict[str, list[Any]] = {}
    for event in ran.events:
        if event["type"] == "agent.invocation-completed":
            ext = event["payload"]["x-openwop-eval"]
            ended.setdefault(ext["taskId"], []).append(ext["conversation"])
    return ended


def test_the_careful_agent_passes_every_conversation(
    run_cli: Callable[..., Ran], endpoint: FakeEndpoint
) -> None:
    ran = _run(run_cli, "careful_agent")
    assert ran.exit_code == 0, ran.output + ran.stderr
    assert ran.summary is not None
    assert ran.summary["passed"] is True
    assert {t["taskId"]: t["gatedScore"] for t in ran.summary["tasks"]} == {
        "rebook-after-cancellation": 1,
        SEAT_TASK: 1,
        "refuse-nonrefundable-refund": 1,
    }
    assert _ended(ran) == {
        "rebook-after-cancellation": [{"turns": 3, "ended": "user"}] * 2,
        SEAT_TASK: [{"turns": 2, "ended": "user"}] * 2,
        "refuse-nonrefundable-refund": [{"turns": 3, "ended": "user"}] * 2,
    }
    # asked twice per trial (after the offer, after the change), on the environment's
    # endpoint and model, the suite's seed offset by the trial's index
    assert len(endpoint.requests) == 4
    first = endpoint.requests[0]
    assert first.body["model"] == "user-model"
    assert first.headers["authorization"] == "Bearer sk-user"
    assert sorted({seen.body["seed"] for seen in endpoint.requests}) == [7, 8]
    assert "Sam Okafor" in first.body["messages"][0]["content"]
    seat_messages = [
        (m["role"], m["x-openwop-eval"]["turn"], m["content"])
        for e in ran.events
        if e["type"] == "agent.message"
        and (m := e["payload"])["x-openwop-eval"]["taskId"] == SEAT_TASK
        and m["x-openwop-eval"]["trial"] == 0
    ]
    assert [(role, turn) for role, turn, _ in seat_messages] == [
        ("user", 0),
        ("assistant", 0),
        ("user", 1),
        ("assistant", 1),
    ]
    assert seat_messages[2][2] == "12A, please."
    assert seat_messages[3][2] == "Done: your seat on AB200 is now 12A."


def test_the_hasty_agent_fails_on_the_turn_where_it_acted_too_soon(
    run_cli: Callable[..., Ran], endpoint: FakeEndpoint
) -> None:
    ran = _run(run_cli, "hasty_agent")
    assert ran.exit_code == 1
    assert ran.summary is not None
    assert ran.summary["passed"] is False
    for task in ran.summary["tasks"]:  # every last reply is right; no path is (RFC 0246)
        assert (task["score"], task["gatedScore"], task["passed"]) == (1, 0, False)
    assert ran.report is not None
    reasons = {
        task["taskId"]: [(r["rule"], r["turn"], r["message"]) for r in task["trials"][0]["reasons"]]
        for task in ran.report["tasks"]
    }
    assert reasons == {
        "rebook-after-cancellation": [
            ("forbidden", 0, "turn 1: called forbidden tool bookings:rebook at call 3"),
            ("missing-step", 1, "turn 2: step 1 (bookings:rebook) was never called"),
        ],
        SEAT_TASK: [
            ("forbidden", 0, "turn 1: called forbidden tool bookings:change-seat at call 3"),
        ],
        "refuse-nonrefundable-refund": [
            ("missing-step", 0, "turn 1: step 1 (bookings:get) was never called"),
        ],
    }
    # its seat change came before the user could choose: the user had nothing left to ask
    assert _ended(ran)[SEAT_TASK] == [{"turns": 1, "ended": "user"}] * 2
    assert len(endpoint.requests) == 2
    # the example's README quotes what the gate says
    readme = (EXAMPLE / "README.md").read_text()
    for said in reasons.values():
        for _, _, message in said:
            assert message in readme
