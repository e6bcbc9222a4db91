"""A scripted agent plays a conversation turn by turn from its script's ``turns``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conversations.suites import suite
from tests.runner.conftest import Ran, write


def _script(turns: list[dict[str, Any]]) -> dict[str, Any]:
    return {"agentId": "test.scripted", "default": [{"turns": turns}]}


CAREFUL_TURNS = [
    {
        "output": "I can offer AB200 at 09:00.",
        "toolCalls": [{"tool": "bookings:get"}, {"tool": "flights:search"}],
    },
    {
        "output": "Done: rebooked on AB200.",
        "toolCalls": [{"tool": "bookings:rebook", "args": {"flight": "AB200"}}],
    },
    {"output": "You're welcome, you are rebooked."},
]


def _run(tmp_path: Path, run_cli: Callable[..., Ran], turns: list[dict[str, Any]]) -> Ran:
    path = write(tmp_path / "suite.json", suite())
    script = write(tmp_path / "script.json", json.dumps(_script(turns)))
    return run_cli(str(path), "--agent", f"scripted:{script}")


def test_a_scripted_agent_plays_each_turn_of_its_script(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    ran = _run(tmp_path, run_cli, CAREFUL_TURNS)
    assert ran.exit_code == 0, ran.output
    called = [e["payload"] for e in ran.events if e["type"] == "agent.tool-called"]
    assert [(c["toolName"], c["x-openwop-eval"]["turn"]) for c in called] == [
        ("bookings:get", 0),
        ("flights:search", 0),
        ("bookings:rebook", 1),
    ]


def test_a_script_with_too_few_turns_breaks_its_protocol(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    ran = _run(tmp_path, run_cli, CAREFUL_TURNS[:2])
    assert ran.exit_code == 1
    completed = next(e for e in ran.events if e["type"] == "agent.invocation-completed")
    assert completed["payload"]["x-openwop-eval"]["error"] == "protocol"
    assert "the script has 2 turns" in ran.report["tasks"][0]["trials"][0]["reasons"][0]["message"]  # type: ignore[index]
