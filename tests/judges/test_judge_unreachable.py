"""A judge that cannot be reached is the infrastructure's failure, not a verdict on the agent:
every attempt a transport error or a server error raises :class:`JudgeUnreachableError`
(an :class:`InfrastructureError` naming the endpoint); one malformed reply among them makes
it the judge's own failure, as before; and a rubric trial whose judge is unreachable errors
on infrastructure."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from openwop_eval import run_suite
from openwop_eval.agents.python import PythonAgent
from openwop_eval.base.errors import InfrastructureError
from openwop_eval.judges.errors import JudgeAttemptsError, JudgeUnreachableError
from openwop_eval.judges.openai import OpenAIJudge
from openwop_eval.store import Store
from tests.fakes.openai_server import FakeEndpoint, Reply, completion, endpoint_fixture
from tests.judges.test_openai_judge import REQUEST

endpoint = pytest.fixture(endpoint_fixture, name="endpoint")


def judged(endpoint: FakeEndpoint) -> None:
    async def go() -> None:
        async with OpenAIJudge(
            "judge-model", base_url=endpoint.url, backoff_base=0, max_attempts=3
        ) as judge:
            await judge.judge_with_record(REQUEST)

    asyncio.run(go())


def test_a_judge_that_only_fails_to_answer_is_unreachable(endpoint: FakeEndpoint) -> None:
    endpoint.script(Reply(503, "unavailable"), Reply(502, "bad gateway"), Reply(drop=True))
    with pytest.raises(JudgeUnreachableError) as caught:
        judged(endpoint)
    assert isinstance(caught.value, InfrastructureError)
    assert isinstance(caught.value, JudgeAttemptsError)  # a judge failure to older callers
    assert caught.value.endpoint == f"{endpoint.url}/chat/completions"
    assert "could not be reached in 3 attempt(s)" in str(caught.value)


def test_a_malformed_reply_among_them_is_the_judges_own_failure(endpoint: FakeEndpoint) -> None:
    endpoint.script(Reply(503, "unavailable"), completion("not JSON"), Reply(502, "bad gateway"))
    with pytest.raises(JudgeAttemptsError) as caught:
        judged(endpoint)
    assert not isinstance(caught.value, InfrastructureError)


RUBRIC_SUITE = {
    "suiteId": "acme.evals.judged",
    "version": "1.0.0",
    "modes": ["rubric"],
    "thresholds": {"passScore": 0},
    "trials": {"count": 1},
    "tasks": [
        {
            "taskId": "polite",
            "input": "Say hello.",
            "expected": {"kind": "rubric", "rubric": [{"criterion": "is polite", "weight": 1}]},
        }
    ],
}


async def hello(task: object, tools: object) -> str:
    return "Hello!"


def test_a_trial_whose_judge_is_unreachable_errors_on_infrastructure(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    endpoint.respond = lambda seen: Reply(503, "unavailable")
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(RUBRIC_SUITE))
    judge = OpenAIJudge("judge-model", base_url=endpoint.url, backoff_base=0, max_attempts=2)
    store = Store(f"sqlite:///{tmp_path}/s.db")
    result = run_suite(str(path), PythonAgent(hello, "hello"), judge=judge, store=store)
    assert result.unreachable() == {f"{endpoint.url}/chat/completions": 1}
    assert result.gate.passed is False  # passScore 0: the scores alone would pass
    assert [r.rule for r in result.gate.reasons] == ["infrastructure"]
