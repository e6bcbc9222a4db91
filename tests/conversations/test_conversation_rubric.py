"""A rubric conversation is judged on its whole transcript, and its path still gates it."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import pytest

from openwop_eval import run_suite
from openwop_eval.files.suites import parse_suite
from openwop_eval.judges.openai import OpenAIJudge
from openwop_eval.store import Store
from tests.conversations.suites import CAREFUL, HASTY, TASK, suite
from tests.fakes.openai_server import FakeEndpoint, completion, serve
from tests.runner.conftest import write


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    with serve() as fake:
        yield fake


@pytest.mark.parametrize(("agent", "passed"), [(CAREFUL, True), (HASTY, False)])
def test_the_judge_reads_the_whole_conversation(
    tmp_path: Path, endpoint: FakeEndpoint, agent: str, passed: bool
) -> None:
    task = copy.deepcopy(TASK)
    task["expected"] = {
        "kind": "rubric",
        "rubric": [{"criterion": "The agent confirmed before rebooking", "weight": 1}],
        "trajectory": TASK["expected"]["trajectory"],
    }
    endpoint.respond = lambda seen: completion({"verdicts": [{"criterion": 1, "met": 1}]})
    judge = OpenAIJudge("judge-model", base_url=endpoint.url, api_key="k")
    store = Store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    path = write(tmp_path / "agent.py", agent)
    result = run_suite(parse_suite(suite(task)), f"{path}:agent", store=store, judge=judge)
    (seen,) = endpoint.requests
    prompt = seen.body["messages"][-1]["content"]
    # every turn of both sides, in order, the agent's last reply last
    assert (
        prompt.index("My flight AB123")
        < prompt.index("the 9 am one")
        < prompt.index("Thanks, that's all")
    )
    assert '"conversation"' in prompt
    assert result.summary["tasks"][0]["score"] == 1.0
    assert result.summary["passed"] is passed  # the judge liked both; the path decides
