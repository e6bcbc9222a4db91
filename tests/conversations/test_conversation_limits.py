"""Hostile sizes in a conversation are bounded: each reply by the output limit, the whole
conversation by the trial's content limit (docs/limits.md); the trial errors, nothing of the
refused content is recorded, and the run goes on."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest

from openwop_eval.base.limits import MAX_OUTPUT_CHARS
from tests.conversations.suites import TASK, suite
from tests.runner.conftest import Ran, write

CHATTY = f"""
def agent(messages, tools):
    return "x" * {MAX_OUTPUT_CHARS - 100}    # just under the limit, every turn
"""

HUGE = f"""
def agent(messages, tools):
    turn = sum(1 for m in messages if m["role"] == "user") - 1
    return "ok" if turn == 0 else "y" * {MAX_OUTPUT_CHARS + 1}
"""


@pytest.mark.parametrize(
    ("agent", "kind"),
    [(CHATTY, "trial-content-too-large"), (HUGE, "output-too-large")],
    ids=["conversation-over-the-trial-limit", "one-reply-over-the-output-limit"],
)
def test_a_hostile_conversation_is_refused_within_its_limits(
    tmp_path: Path, run_cli: Callable[..., Ran], agent: str, kind: str
) -> None:
    task = copy.deepcopy(TASK)
    conversation = task["x-openwop-eval"]["conversation"]
    conversation.update(maxTurns=6, turns=[])
    conversation["user"]["script"] = ["more"] * 5
    suite_path = write(tmp_path / "suite.json", suite(task))
    agent_path = write(tmp_path / "agent.py", agent)
    ran = run_cli(str(suite_path), "--agent", f"{agent_path}:agent")
    assert ran.exit_code == 1
    completed = [e for e in ran.events if e["type"] == "agent.invocation-completed"]
    assert completed[0]["payload"]["x-openwop-eval"]["error"] == kind
    replies = [
        e
        for e in ran.events
        if e["type"] == "agent.message" and e["payload"]["role"] == "assistant"
    ]
    recorded = sum(len(e["payload"]["content"]) for e in replies)
    assert recorded <= 4 * MAX_OUTPUT_CHARS  # the refused reply is not in the log
