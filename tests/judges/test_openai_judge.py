"""The OpenAI-compatible judge against a real HTTP endpoint on loopback that replays replies."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from openwop_eval import CriterionVerdict, JudgeProtocolError, JudgeRequest
from openwop_eval.judges import (
    JudgeAttemptsError,
    JudgeHTTPError,
    JudgeRecord,
    JudgeSpecError,
    OpenAIJudge,
    parse_verdicts,
    resolve_judge,
)
from tests.fakes.openai_server import (
    FakeEndpoint,
    Reply,
    Sleeps,
    completion,
    endpoint_fixture,
)

API_KEY = "sk-test-0123456789abcdef"
REQUEST = JudgeRequest(
    task_id="refunds",
    trial_index=2,
    input={"question": "How long do I have to return shoes?"},
    output="You can return them within 30 days.",
    criteria=("states the 30-day window", "is polite"),
)
GOOD = {
    "verdicts": [
        {"criterion": 1, "met": 1, "rationale": "says 30 days"},
        {"criterion": 2, "met": 0.5},
    ]
}
GOOD_VERDICTS = [CriterionVerdict(1.0, "says 30 days"), CriterionVerdict(0.5, None)]


endpoint = pytest.fixture(endpoint_fixture, name="endpoint")


def make_judge(endpoint: FakeEndpoint, sleeps: Sleeps | None = None, **options: Any) -> OpenAIJudge:
    options.setdefault("api_key", API_KEY)
    options.setdefault("backoff_base", 0)
    if sleeps is not None:
        options["sleep"] = sleeps
    return OpenAIJudge("judge-model", base_url=endpoint.url, **options)


def run(judge: OpenAIJudge) -> tuple[list[CriterionVerdict], JudgeRecord]:
    async def go() -> tuple[list[CriterionVerdict], JudgeRecord]:
        async with judge:
            return await judge.judge_with_record(REQUEST)

    return asyncio.run(go())


def test_a_good_reply_gives_the_verdicts(endpoint: FakeEndpoint) -> None:
    endpoint.script(completion(GOOD, usage={"prompt_tokens": 120, "completion_tokens": 30}))
    verdicts, record = run(make_judge(endpoint))
    assert verdicts == GOOD_VERDICTS
    [seen] = endpoint.requests
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == f"Bearer {API_KEY}"
    assert seen.body["model"] == "judge-model"
    assert seen.body["temperature"] == 0
    assert seen.body["response_format"] == {"type": "json_object"}
    system, user = seen.body["messages"]
    assert system["role"] == "system"
    assert '{"verdicts": [{"criterion": 1, "met": <number 0..1>' in system["content"]
    assert user["role"] == "user"
    assert "1. states the 30-day window\n2. is polite" in user["content"]
    assert "You can return them within 30 days." in user["content"]
    assert '{\n  "question": "How long do I have to return shoes?"\n}' in user["content"]
    assert record.verdicts == tuple(GOOD_VERDICTS)
    [attempt] = record.attempts
    assert attempt.model == "judge-model-2024"
    assert attempt.usage == {"prompt_tokens": 120, "completion_tokens": 30}
    assert attempt.status == 200
    assert attempt.error is None
    assert json.loads(attempt.reply or "") == GOOD


def test_the_record_is_json_ready(endpoint: FakeEndpoint) -> None:
    endpoint.script(completion("not json"), completion(GOOD))
    _, record = run(make_judge(endpoint))
    data = json.loads(json.dumps(record.as_dict()))
    assert data["judge"] == "openai"
    assert (data["model"], data["taskId"], data["trialIndex"]) == ("judge-model", "refunds", 2)
    assert data["verdicts"] == [
        {"met": 1.0, "rationale": "says 30 days"},
        {"met": 0.5, "rationale": None},
    ]
    first, second = data["attempts"]
    assert first["reply"] == "not json"
    assert first["error"].startswith("the reply is not valid JSON")
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    assert second["error"] is None
    assert API_KEY not in json.dumps(data)


def test_a_fenced_json_reply_is_accepted(endpoint: FakeEndpoint) -> None:
    endpoint.script(completion(f"```json\n{json.dumps(GOOD, indent=2)}\n```"))
    verdicts, _ = run(make_judge(endpoint))
    assert verdicts == GOOD_VERDICTS


def test_a_malformed_reply_is_retried_with_a_correction(endpoint: FakeEndpoint) -> None:
    bad = {"verdicts": [{"criterion": 1, "met": 2}, {"criterion": 2, "met": True}]}
    endpoint.script(completion(bad), completion(GOOD))
    verdicts, record = run(make_judge(endpoint))
    assert verdicts == GOOD_VERDICTS
    assert len(endpoint.requests) == 2
    messages = endpoint.requests[1].body["messages"]
    assert messages[:2] == endpoint.requests[0].body["messages"]
    assert messages[2] == {"role": "assistant", "content": json.dumps(bad)}
    correction = messages[3]
    assert correction["role"] == "user"
    assert "verdicts[0].met must be a number from 0 to 1, got 2" in correction["content"]
    assert "verdicts[1].met must be a number from 0 to 1, got true" in correction["content"]
    assert "exactly 2 verdict(s)" in correction["content"]
    assert [a.error is None for a in record.attempts] == [False, True]


def test_always_malformed_fails_after_max_attempts(endpoint: FakeEndpoint) -> None:
    endpoint.script(
        completion("I think it is fine."),
        completion({"verdicts": [{"criterion": 1, "met": 1}]}),
        completion([1, 0.5]),
        completion(GOOD),  # never asked for
    )
    with pytest.raises(JudgeAttemptsError) as caught:
        run(make_judge(endpoint, max_attempts=3))
    assert isinstance(caught.value, JudgeProtocolError)
    message = str(caught.value)
    assert "task 'refunds' trial 2 after 3 attempt(s)" in message
    assert "attempt 1: the reply is not valid JSON" in message
    assert 'attempt 2: "verdicts" must have exactly 2 item(s), one per criterion; got 1' in message
    assert 'attempt 3: the reply must be a JSON object {"verdicts": [...]}, got [1, 0.5]' in message
    assert len(endpoint.requests) == 3
    assert len(caught.value.record.attempts) == 3
    assert caught.value.record.verdicts is None


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ({"verdicts": [{"criterion": 1, "met": 1}]}, '"verdicts" must have exactly 2 item(s)'),
        (
            {"verdicts": [*GOOD["verdicts"], {"criterion": 3, "met": 1}]},
            "one per criterion; got 3",
        ),
        ({"verdicts": [{"criterion": 1, "met": 1.5}, {"criterion": 2, "met": 1}]}, "got 1.5"),
        ({"verdicts": [{"criterion": 1, "met": -0.1}, {"criterion": 2, "met": 1}]}, "got -0.1"),
        (
            {"verdicts": [{"criterion": 1, "met": False}, {"criterion": 2, "met": 1}]},
            "verdicts[0].met must be a number from 0 to 1, got false",
        ),
        (
            {"verdicts": [{"criterion": 1, "met": "1"}, {"criterion": 2, "met": 1}]},
            'got "1"',
        ),
        ({"verdicts": [{"criterion": 1}, {"criterion": 2, "met": 1}]}, "got nothing"),
        (
            {"verdicts": [{"criterion": 2, "met": 1}, {"criterion": 1, "met": 1}]},
            "verdicts[0].criterion must be 1, got 2",
        ),
        (
            {"verdicts": [{"criterion": True, "met": 1}, {"criterion": 2, "met": 1}]},
            "verdicts[0].criterion must be 1, got true",
        ),
        (
            {"verdicts": [{"criterion": 1, "met": 1, "rationale": 5}, {"criterion": 2, "met": 1}]},
            "verdicts[0].rationale must be a string, got 5",
        ),
        ({"verdicts": {"1": 1}}, '"verdicts" must be an array'),
        ({"scores": [1, 1]}, '"verdicts" must be an array, got nothing'),
        ({"verdicts": [1, 1]}, "verdicts[0] must be an object, got 1"),
        ('{"verdicts": [{"criterion": 1, "met": NaN}]}', "NaN is not a JSON number"),
        ("Sure! ```json\n{}\n```", "not valid JSON"),
    ],
)
def test_unusable_replies_are_rejected(reply: Any, reason: str) -> None:
    text = reply if isinstance(reply, str) else json.dumps(reply)
    verdicts, reasons = parse_verdicts(text, 2)
    assert verdicts == []
    assert any(reason in r for r in reasons), reasons


def test_a_wrong_count_through_the_endpoint_is_a_protocol_error(endpoint: FakeEndpoint) -> None:
    endpoint.script(completion({"verdicts": [{"criterion": 1, "met": 1}]}))
    with pytest.raises(JudgeProtocolError, match=r"must have exactly 2 item\(s\)"):
        run(make_judge(endpoint, max_attempts=1))


def test_server_errors_are_retried_with_exponential_backoff(endpoint: FakeEndpoint) -> None:
    endpoint.script(
        Reply(500, '{"error": "boom"}'),
        Reply(503, "unavailable"),
        Reply(502, "bad gateway"),
        completion(GOOD),
    )
    sleeps = Sleeps()
    verdicts, record = run(make_judge(endpoint, sleeps, backoff_base=0.5, max_attempts=4))
    assert verdicts == GOOD_VERDICTS
    assert sleeps.delays == [0.5, 1.0, 2.0]
    assert [a.status for a in record.attempts] == [500, 503, 502, 200]
    assert record.attempts[0].error == 'HTTP 500: {"error": "boom"}'
    # a server error is not the model's fault: the same messages are sent again
    assert all(
        r.body["messages"] == endpoint.requests[0].body["messages"] for r in endpoint.requests
    )


def test_a_429_waits_at_least_as_long_as_retry_after(endpoint: FakeEndpoint) -> None:
    endpoint.script(Reply(429, "slow down", {"Retry-After": "7"}), completion(GOOD))
    sleeps = Sleeps()
    verdicts, _ = run(make_judge(endpoint, sleeps, backoff_base=0.5))
    assert verdicts == GOOD_VERDICTS
    assert sleeps.delays == [7.0]


def test_persistent_server_errors_fail_with_every_reason(endpoint: FakeEndpoint) -> None:
    endpoint.script(Reply(500, "a"), Reply(500, "b"))
    sleeps = Sleeps()
    with pytest.raises(JudgeProtocolError) as caught:
        run(make_judge(endpoint, sleeps, max_attempts=2))
    assert "attempt 1: HTTP 500: a\n  attempt 2: HTTP 500: b" in str(caught.value)
    assert sleeps.delays == [0]  # no wait after the last attempt


def test_a_dropped_connection_is_retried(endpoint: FakeEndpoint) -> None:
    endpoint.script(Reply(drop=True), completion(GOOD))
    verdicts, record = run(make_judge(endpoint))
    assert verdicts == GOOD_VERDICTS
    assert (record.attempts[0].error or "").startswith("transport error: RemoteProtocolError")


def test_a_timeout_is_retried(endpoint: FakeEndpoint) -> None:
    endpoint.script(Reply(hang=True), completion(GOOD))
    verdicts, record = run(make_judge(endpoint, timeout=0.2))
    assert verdicts == GOOD_VERDICTS
    assert (record.attempts[0].error or "").startswith("transport error: ReadTimeout")


def test_a_reply_that_is_not_a_completion_is_retried(endpoint: FakeEndpoint) -> None:
    endpoint.script(Reply(200, "<html>proxy</html>"), completion(GOOD))
    verdicts, record = run(make_judge(endpoint))
    assert verdicts == GOOD_VERDICTS
    assert record.attempts[0].error == "the response is not a chat completion: <html>proxy</html>"


def test_a_401_fails_at_once_without_the_key(endpoint: FakeEndpoint) -> None:
    echo = {"error": {"message": f"Incorrect API key provided: {API_KEY}"}}
    endpoint.script(Reply(401, json.dumps(echo)), completion(GOOD))
    with pytest.raises(JudgeHTTPError) as caught:
        run(make_judge(endpoint))
    message = str(caught.value)
    assert "HTTP 401" in message
    assert "Incorrect API key provided: [redacted]" in message
    assert API_KEY not in message
    assert API_KEY not in json.dumps(caught.value.record.as_dict())
    assert caught.value.status == 401
    assert len(endpoint.requests) == 1


def test_a_400_fails_at_once(endpoint: FakeEndpoint) -> None:
    endpoint.script(Reply(400, "response_format is not supported"))
    with pytest.raises(JudgeHTTPError, match="HTTP 400: response_format is not supported"):
        run(make_judge(endpoint))
    assert len(endpoint.requests) == 1


def test_json_mode_can_be_turned_off_and_the_key_left_out(endpoint: FakeEndpoint) -> None:
    endpoint.script(completion(GOOD))
    run(make_judge(endpoint, json_mode=False, api_key=None))
    [seen] = endpoint.requests
    assert "response_format" not in seen.body
    assert "authorization" not in seen.headers


def test_from_env_reads_the_judge_variables_first() -> None:
    judge = OpenAIJudge.from_env(
        environ={
            "OPENWOP_EVAL_JUDGE_MODEL": "m1",
            "OPENWOP_EVAL_JUDGE_BASE_URL": "http://127.0.0.1:9/v1/",
            "OPENAI_BASE_URL": "http://elsewhere/v1",
            "OPENWOP_EVAL_JUDGE_API_KEY": "",
            "OPENAI_API_KEY": API_KEY,
        }
    )
    assert (judge.model, judge.base_url) == ("m1", "http://127.0.0.1:9/v1")
    assert API_KEY not in repr(judge)
    default = OpenAIJudge.from_env("m2", environ={})
    assert default.base_url == "https://api.openai.com/v1"
    override = OpenAIJudge.from_env("m3", "http://127.0.0.1:1/v1", environ={"OPENAI_BASE_URL": "x"})
    assert override.base_url == "http://127.0.0.1:1/v1"


def test_from_env_needs_a_model() -> None:
    with pytest.raises(JudgeSpecError, match="OPENWOP_EVAL_JUDGE_MODEL"):
        OpenAIJudge.from_env(environ={})


def test_resolve_judge_builds_an_openai_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENWOP_EVAL_JUDGE_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:2/v1")
    judge = resolve_judge("openai:gpt-judge", api_key=API_KEY)
    assert isinstance(judge, OpenAIJudge)
    assert (judge.model, judge.base_url) == ("gpt-judge", "http://127.0.0.1:2/v1")
    asyncio.run(judge.aclose())


@pytest.mark.parametrize("options", [{"max_attempts": 0}, {"timeout": 0}, {"backoff_base": -1}])
def test_bad_options_are_rejected(options: dict[str, Any]) -> None:
    with pytest.raises(JudgeSpecError):
        OpenAIJudge("m", **options)


def test_a_refusing_judge_ends_the_run_without_a_traceback(
    endpoint: FakeEndpoint, tmp_path: Any
) -> None:
    from click.testing import CliRunner

    from openwop_eval.cli.main import main
    from openwop_eval.store import Store

    endpoint.script(Reply(401, json.dumps({"error": {"message": "bad key"}})))
    suite = {
        "suiteId": "test.openwop.evals.judge",
        "version": "1.0.0",
        "modes": ["rubric"],
        "tasks": [
            {
                "taskId": "t",
                "input": {},
                "expected": {"kind": "rubric", "rubric": [{"criterion": "polite", "weight": 1}]},
            }
        ],
    }
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    (tmp_path / "agent.json").write_text(json.dumps({"agentId": "a", "default": [{"output": 1}]}))
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    argv = ["run", str(tmp_path / "suite.json"), "--agent", f"scripted:{tmp_path / 'agent.json'}"]
    argv += ["--judge", "openai:m", "--judge-base-url", endpoint.url, "--judge-api-key", API_KEY]
    result = CliRunner().invoke(main, [*argv, "--store", url, "--quiet"])
    assert result.exit_code == 3
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "the run could not complete: JudgeHTTPError" in result.stderr
    assert API_KEY not in result.stderr
    (run,) = Store(url).list_runs()
    assert run.status == "failed"
    assert run.error == "the run stopped on an internal error"
