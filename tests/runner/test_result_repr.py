"""A run's result reads in one short line, whatever the suite's size.

``asyncio.run`` formats its finished task, the result included, as it restores the interrupt
handler (Python 3.11 builds that text in full before cutting it). The generated text of a
result walked the whole suite and every grade: for 10,000 tasks, seconds at the end of every
run of the command line, of ``run_suite`` and of the pytest plugin.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openwop_eval import parse_suite
from openwop_eval.agents import AgentReply
from openwop_eval.core import SuiteGrade
from openwop_eval.runner.api import run_suite
from openwop_eval.store import Store
from tests.helpers import golden, suite_doc


class _Agent:
    agent_id = "test.answers"

    def __init__(self, answer: str) -> None:
        self.answer = answer

    async def run(self, context: Any, port: Any) -> AgentReply:
        return AgentReply(self.answer)


def _deep(_grade: SuiteGrade) -> str:
    raise AssertionError("a run's result was formatted in depth")


@pytest.mark.parametrize(("answer", "verdict"), [("ok", "passed"), ("no", "not passed")])
def test_a_run_ends_without_formatting_its_result_in_depth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str, verdict: str
) -> None:
    doc = suite_doc(*(golden(f"t{i}") for i in range(40)), trials={"count": 2})
    store = Store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    monkeypatch.setattr(SuiteGrade, "__repr__", _deep)
    result = run_suite(parse_suite(doc), _Agent(answer), store=store)  # asyncio.run, main thread
    assert repr(result) == f"<RunResult {result.run_id} {verdict}, 40 tasks>"
    store.close()
