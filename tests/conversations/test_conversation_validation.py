"""`validate` on conversation tasks: every mistake a located error, before anything runs."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from openwop_eval.cli.main import main
from tests.conversations.suites import TASK, suite
from tests.runner.conftest import write

CONVERSATION = "$.tasks[0].x-openwop-eval.conversation"


def _validate(tmp_path: Path, change: Any) -> str:
    task = copy.deepcopy(TASK)
    change(task)
    path = write(tmp_path / "suite.json", suite(task))
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2, result.output
    return result.output + (result.stderr if result.stderr_bytes else "")


def _conv(task: dict[str, Any]) -> dict[str, Any]:
    conversation: dict[str, Any] = task["x-openwop-eval"]["conversation"]
    return conversation


@pytest.mark.parametrize(
    ("change", "where", "says"),
    [
        (lambda t: t.update(input={"orderId": 1}), "$.tasks[0].input", "first user turn"),
        (
            lambda t: _conv(t)["user"]["script"].extend(["a", "b", "c"]),
            f"{CONVERSATION}.user.script",
            "every trial would run out of turns",
        ),
        (
            lambda t: _conv(t).update(maxTurns=1),
            f"{CONVERSATION}.turns",
            "maxTurns is 1",
        ),
        (
            lambda t: _conv(t)["user"].update(
                simulator={"model": "openai:m", "persona": "p", "goal": "g"}
            ),
            f"{CONVERSATION}.user",
            "exactly one of script or simulator",
        ),
        (
            lambda t: _conv(t)["turns"][0]["trajectory"].update(forbidden=["bookings:*"]),
            f"{CONVERSATION}.turns[0].trajectory.steps[0].tool",
            "also forbidden",
        ),
        (lambda t: _conv(t).update(maxTurns=51), f"{CONVERSATION}.maxTurns", "50"),
        (lambda t: _conv(t).update(rounds=3), CONVERSATION, "rounds"),
        (
            lambda t: _conv(t)["user"].update(script=["x" * 20_001]),
            f"{CONVERSATION}.user.script[0]",
            "the limit is 20000",
        ),
        (
            lambda t: (
                _conv(t)["user"].pop("script")
                and _conv(t)["user"].update(simulator={"model": "gpt", "persona": "p", "goal": "g"})
            ),
            f"{CONVERSATION}.user.simulator.model",
            "openai:",
        ),
    ],
    ids=[
        "input-not-a-message",
        "script-too-long",
        "more-rules-than-turns",
        "script-and-simulator",
        "contradictory-turn-rule",
        "max-turns-over-limit",
        "unknown-key",
        "huge-message",
        "model-form",
    ],
)
def test_a_conversation_mistake_is_a_located_error(
    tmp_path: Path, change: Any, where: str, says: str
) -> None:
    output = _validate(tmp_path, change)
    lines = [line for line in output.splitlines() if where in line]
    assert lines, output
    assert any(says in line for line in lines), output
    assert "Traceback" not in output
