"""Any agent's transcript reaches the trial's diagnostics — from its reply, or from the
exception it raised — and nothing that is not JSON gets that far."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openwop_eval.agents import AgentProtocolError, AgentReply
from openwop_eval.agents.python import PythonAgent
from tests.agents.conftest import run_suite
from tests.helpers import golden, suite_doc

TRANSCRIPT = {"messages": [{"role": "user", "content": "hi"}]}


class GaveUpError(RuntimeError):
    transcript = TRANSCRIPT


async def answers(task_input: Any, tools: Any) -> AgentReply:
    return AgentReply("ok", transcript=TRANSCRIPT)


async def raises(task_input: Any, tools: Any) -> AgentReply:
    raise GaveUpError("the model gave up")


async def plain(task_input: Any, tools: Any) -> str:
    return "ok"


@pytest.mark.parametrize("fn", [answers, raises])
def test_the_transcript_reaches_the_diagnostics(fn: Any, tmp_path: Path) -> None:
    ran = run_suite(suite_doc(golden("t")), PythonAgent(fn, "py"), tmp_path)
    assert ran.diagnostics()["transcript"] == TRANSCRIPT


def test_no_transcript_no_key(tmp_path: Path) -> None:
    ran = run_suite(suite_doc(golden("t")), PythonAgent(plain, "py"), tmp_path)
    assert "transcript" not in ran.diagnostics()


@pytest.mark.parametrize("value", [object(), {"n": float("nan")}, {"s": {1, 2}}])
def test_a_transcript_that_is_not_json_is_refused(value: Any) -> None:
    with pytest.raises(AgentProtocolError, match="the transcript is not JSON"):
        AgentReply("ok", transcript=value)
