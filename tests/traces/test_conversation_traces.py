"""Recorded multi-turn conversations graded against conversation tasks: each agent turn's
calls are attributed to it, per-turn rules apply, a recording longer than ``maxTurns`` runs
out of turns — for OpenAI chat messages, Responses items and OpenTelemetry spans (one trace,
or one trace per turn of a session). Graded against a one-reply task, the same recording is
graded as it always was: every call, in turn 0."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToJson
from openai import AsyncOpenAI
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent, InstrumentationSettings
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from openwop_eval.core.suite import MAX_USER_MESSAGE_CHARS
from openwop_eval.traces import read_trace_file
from tests.fakes.openai_server import Reply, Seen, serve

from .conftest import Invoke, Outcome
from .conversations import (
    CAREFUL,
    CHARGE,
    FIRST,
    GET,
    HASTY,
    LATE_FORBIDDEN,
    REBOOK,
    SEARCH,
    TASK,
    Turn,
    chat_record,
    invocation,
    one_trace,
    response_items,
    session_traces,
    suite,
    write,
)
from .otel import MS, T0, Recorder


def grade(cli: Invoke, tmp: Path, trace: Any, suite_doc: Any = None, *extra: str) -> Outcome:
    suite_path = write(tmp / "suite.json", suite_doc or suite())
    traces = write(tmp / "trace.json", trace)
    return cli("grade", str(suite_path), str(traces), *extra)


def trial(outcome: Outcome) -> dict[str, Any]:
    found: dict[str, Any] = outcome.report["tasks"][0]["trials"][0]
    return found


def turns_of_calls(outcome: Outcome) -> list[tuple[str, int]]:
    return [(c["tool"], c["turn"]) for c in trial(outcome)["calls"]]


def verified(cli: Invoke, tmp: Path, outcome: Outcome) -> None:
    """``verify`` recomputes the grade from the event log alone."""
    summary = str(outcome.dir / "summary.json")
    checked = cli("verify", str(tmp / "suite.json"), str(outcome.events), "--summary", summary)
    assert checked.exit_code == 0, checked.stderr
    assert "agrees with the event log" in checked.stderr


# OpenAI chat messages


def test_a_good_multi_turn_chat_trace_passes_each_call_in_its_turn(
    cli: Invoke, tmp_path: Path
) -> None:
    graded = grade(cli, tmp_path, chat_record(CAREFUL, costUsd=0.03, latencyMs=900))
    assert graded.exit_code == 0, graded.stdout + graded.stderr
    assert turns_of_calls(graded) == [
        ("bookings_get", 0),
        ("flights_search", 0),
        ("bookings_rebook", 1),
    ]
    done = trial(graded)
    assert done["output"] == CAREFUL[-1].reply
    assert (done["costUsd"], done["latencyMs"]) == (0.03, 900)  # the recording's, whole
    conversation = done["conversation"]
    assert (conversation["turns"], conversation["ended"]) == (3, "user")
    assert [e["user"] for e in conversation["exchanges"]] == [t.user for t in CAREFUL]
    assert [e["reply"] for e in conversation["exchanges"]] == [t.reply for t in CAREFUL]
    verified(cli, tmp_path, graded)


def test_a_forbidden_call_made_only_in_a_late_turn_fails(cli: Invoke, tmp_path: Path) -> None:
    graded = grade(cli, tmp_path, chat_record(LATE_FORBIDDEN))
    assert graded.exit_code == 1
    done = trial(graded)
    assert (done["outputScore"], done["gatingScore"], done["passed"]) == (1.0, 0.0, False)
    assert turns_of_calls(graded)[-1] == ("payments_charge", 2)
    assert any("forbidden tool payments_charge" in r["message"] for r in done["reasons"])
    verified(cli, tmp_path, graded)


def test_a_turn_rule_fails_while_the_whole_trajectory_matches(cli: Invoke, tmp_path: Path) -> None:
    whole_only = grade(cli, tmp_path, chat_record(HASTY), suite(turns=[]))
    assert whole_only.exit_code == 0, whole_only.stdout  # the path over every turn is right
    graded = grade(cli, tmp_path, chat_record(HASTY))
    assert graded.exit_code == 1
    reasons = trial(graded)["reasons"]
    assert [r.get("turn") for r in reasons] == [0, 1]
    assert reasons[0]["message"].startswith("turn 1: ")
    assert "bookings_rebook" in reasons[0]["message"]
    assert reasons[0]["callIndex"] == 2  # counted over the whole conversation
    assert reasons[1]["message"].startswith("turn 2: ")  # it rebooked before it was asked


def test_a_trace_longer_than_max_turns_runs_out_of_turns(cli: Invoke, tmp_path: Path) -> None:
    longer = (
        *CAREFUL[:2],
        *(Turn(f"And one more thing ({i})?", (), "You are rebooked, yes.") for i in range(3)),
    )
    graded = grade(cli, tmp_path, chat_record(longer))
    assert graded.exit_code == 1
    done = trial(graded)
    assert (done["outputScore"], done["gatingScore"]) == (1.0, 0.0)  # its output score kept
    assert done["reasons"][-1]["rule"] == "turns-exhausted"
    assert (done["conversation"]["turns"], done["conversation"]["ended"]) == (4, "max-turns")
    verified(cli, tmp_path, graded)


def test_a_trace_ending_on_the_user_after_max_turns_replies_runs_out_of_turns(
    cli: Invoke, tmp_path: Path
) -> None:
    trace = chat_record(CAREFUL)
    trace["messages"].append({"role": "user", "content": "Wait, one more thing."})
    graded = grade(cli, tmp_path, trace, suite(maxTurns=3))
    assert graded.exit_code == 1
    done = trial(graded)
    assert done["outcome"] == "failed"
    assert [r["rule"] for r in done["reasons"]] == ["turns-exhausted"]


def test_a_trace_ending_on_a_user_message_never_answered_errors_at_that_turn(
    cli: Invoke, tmp_path: Path
) -> None:
    """Fewer replies than maxTurns: the agent had a turn to answer in, and did not."""
    graded = grade(cli, tmp_path, chat_record((*CAREFUL[:2], Turn("Thanks!", (), None))))
    assert graded.exit_code == 1
    done = trial(graded)
    assert done["outcome"] == "errored"
    assert "the user's message of turn 3, which the agent never answered" in done["error"]
    assert turns_of_calls(graded) == [
        ("bookings_get", 0),
        ("flights_search", 0),
        ("bookings_rebook", 1),
    ]


def test_graded_against_a_one_reply_task_every_call_is_in_turn_0_as_before(
    cli: Invoke, tmp_path: Path
) -> None:
    """The same summary as the scripted agent that makes every call and answers the last
    reply — what grading such a trace always gave."""
    one_reply = suite(conversation=None)
    graded = grade(cli, tmp_path, chat_record(LATE_FORBIDDEN, latencyMs=700), one_reply)
    script = {
        "agentId": "scripted-equivalent",
        "tasks": {
            TASK: [
                {
                    "output": LATE_FORBIDDEN[-1].reply,
                    "latencyMs": 700,
                    "toolCalls": [
                        {"tool": t, "args": a} for t, a, _ in (GET, SEARCH, REBOOK, CHARGE)
                    ],
                }
            ]
        },
    }
    agent = write(tmp_path / "agent.json", script)
    ran = cli("run", str(tmp_path / "suite.json"), "--agent", f"scripted:{agent}")
    assert graded.exit_code == ran.exit_code == 1
    assert graded.summary == ran.summary
    assert {c.get("turn", 0) for c in trial(graded)["calls"]} == {0}
    assert "conversation" not in trial(graded)


def test_consecutive_user_messages_are_one_turn_and_a_greeting_belongs_to_the_first(
    tmp_path: Path,
) -> None:
    record = chat_record(CAREFUL)
    messages = record["messages"]
    messages.insert(1, {"role": "assistant", "content": "Hello! How can I help?"})
    messages.insert(3, {"role": "user", "content": [{"type": "text", "text": "It's urgent."}]})
    (trace,), problems = read_trace_file(str(write(tmp_path / "t.json", record)))
    assert problems == []
    assert [t.user for t in trace.turns] == [
        f"{FIRST}\n\nIt's urgent.",
        CAREFUL[1].user,
        CAREFUL[2].user,
    ]
    assert [t.output for t in trace.turns] == [t.reply for t in CAREFUL]
    assert [c.turn for c in trace.calls] == [0, 0, 1]


# Responses items


@pytest.mark.parametrize(("turns", "code"), [(CAREFUL, 0), (HASTY, 1), (LATE_FORBIDDEN, 1)])
def test_responses_items_of_several_user_inputs_are_graded_turn_by_turn(
    cli: Invoke, tmp_path: Path, turns: tuple[Turn, ...], code: int
) -> None:
    record = {"taskId": TASK, "trial": 0, "items": response_items(turns)}
    graded = grade(cli, tmp_path, record)
    assert graded.exit_code == code, graded.stdout
    expected = [(call[0], i) for i, turn in enumerate(turns) for call in turn.calls]
    assert turns_of_calls(graded) == expected
    assert trial(graded)["conversation"]["turns"] == len(turns)


# OpenTelemetry spans


@pytest.mark.parametrize(("turns", "code"), [(CAREFUL, 0), (LATE_FORBIDDEN, 1)])
def test_one_trace_of_several_agent_invocations_is_a_turn_each(
    cli: Invoke, tmp_path: Path, turns: tuple[Turn, ...], code: int
) -> None:
    graded = grade(cli, tmp_path, one_trace(turns))
    assert graded.exit_code == code, graded.stdout
    expected = [(call[0], i) for i, turn in enumerate(turns) for call in turn.calls]
    assert turns_of_calls(graded) == expected
    exchanges = trial(graded)["conversation"]["exchanges"]
    assert [e["user"] for e in exchanges[1:]] == [
        t.user for t in turns[1:]
    ]  # the first: the task's
    assert trial(graded)["output"] == turns[-1].reply
    verified(cli, tmp_path, graded)


def test_the_traces_of_one_session_are_one_conversation_in_start_order(
    cli: Invoke, tmp_path: Path
) -> None:
    export = session_traces(HASTY)
    spans = export["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans.reverse()  # the file's order is not the conversation's
    graded = grade(cli, tmp_path, export)
    assert graded.exit_code == 1, graded.stderr
    assert turns_of_calls(graded) == [
        ("bookings_get", 0),
        ("flights_search", 0),
        ("bookings_rebook", 0),
    ]
    assert [r.get("turn") for r in trial(graded)["reasons"]] == [0, 1]
    assert trial(graded)["output"] == HASTY[-1].reply


def test_a_map_entry_for_the_session_names_the_trial_of_all_its_traces(
    cli: Invoke, tmp_path: Path
) -> None:
    export = session_traces(CAREFUL, session="support-42")
    for span in export["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["attributes"] = [a for a in span["attributes"] if not a["key"].startswith("openwop.")]
    mapped = write(tmp_path / "map.json", {"traces": {"support-42": {"taskId": TASK}}})
    graded = grade(cli, tmp_path, export, None, "--map", str(mapped))
    assert graded.exit_code == 0, graded.stderr
    assert trial(graded)["conversation"]["turns"] == 3


def test_traces_of_one_session_naming_different_trials_stay_apart(
    cli: Invoke, tmp_path: Path
) -> None:
    export = session_traces(CAREFUL[:2])
    second = export["resourceSpans"][0]["scopeSpans"][0]["spans"]
    for span in second:
        if span["name"].startswith("invoke_agent") and not any(
            a["key"] == "openwop.eval.task_id" for a in span["attributes"]
        ):
            span["attributes"] += [
                {"key": "openwop.eval.task_id", "value": {"stringValue": TASK}},
                {"key": "openwop.eval.trial", "value": {"intValue": "1"}},
            ]
    graded = grade(cli, tmp_path, export, suite() | {"trials": {"count": 2}})
    trials = graded.report["tasks"][0]["trials"]
    assert [t["conversation"]["turns"] for t in trials] == [1, 1]


def test_model_calls_without_agent_spans_start_a_turn_at_each_user_message(
    tmp_path: Path,
) -> None:
    """A chat span whose input ends on a user message starts a turn; one that goes on after
    tool results does not."""
    recorder = Recorder()
    history: list[dict[str, Any]] = []
    at = T0
    for turn in CAREFUL:
        history.append({"role": "user", "parts": [{"type": "text", "content": turn.user}]})
        for tool, args, result in turn.calls:
            recorder.span("chat airline-model", at, at + MS, None, chat_span(history))
            history.append({"role": "tool", "parts": [{"type": "tool_call_response"}]})
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.arguments": json.dumps(args),
                "gen_ai.tool.call.result": json.dumps(result),
            }
            recorder.span(f"execute_tool {tool}", at + 2 * MS, at + 3 * MS, None, attributes)
            at += 10 * MS
        answer = [{"role": "assistant", "parts": [{"type": "text", "content": turn.reply}]}]
        attributes = chat_span(history) | {"gen_ai.output.messages": json.dumps(answer)}
        recorder.span("chat airline-model", at, at + MS, None, attributes)
        history.append(answer[0])
        at += 10 * MS
    export = recorder.export()
    spans = export["resourceSpans"][0]["scopeSpans"][0]["spans"]
    trace_id = spans[0]["traceId"]
    for span in spans:  # one trace, as an instrumented chat client in one request writes it
        span["traceId"] = trace_id
    (trace,), problems = read_trace_file(str(write(tmp_path / "spans.json", export)))
    assert problems == []
    assert [(c.tool, c.turn) for c in trace.calls] == [
        ("bookings_get", 0),
        ("flights_search", 0),
        ("bookings_rebook", 1),
    ]
    assert [(t.user, t.output) for t in trace.turns] == [(t.user, t.reply) for t in CAREFUL]


def chat_span(history: list[dict[str, Any]]) -> dict[str, Any]:
    return {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(history)}


# A Pydantic AI agent, run once per user message: one trace per run, one conversation id.


def bookings_get(flight: str) -> Any:
    """Look a booking up."""
    return GET[2]


def flights_search(origin: str) -> Any:
    """Search the flights from an origin."""
    return SEARCH[2]


def bookings_rebook(flight: str) -> Any:
    """Rebook the traveller on a flight."""
    return REBOOK[2]


def payments_charge(amountUsd: int) -> Any:  # noqa: N803 - the tool's spelling
    """Charge the traveller."""
    return CHARGE[2]


def scripted(turns: tuple[Turn, ...]) -> Any:
    """The model: in turn *k* (the k-th user message) it asks for turn *k*'s calls, one a
    request, then answers its reply."""

    def respond(seen: Seen) -> Reply:
        messages = seen.body["messages"]
        users = [i for i, m in enumerate(messages) if m["role"] == "user"]
        turn = turns[len(users) - 1]
        done = sum(1 for m in messages[users[-1] :] if m["role"] == "tool")
        if done < len(turn.calls):
            tool, args, _ = turn.calls[done]
            call = {"id": f"call_{len(messages)}", "type": "function"}
            call["function"] = {"name": tool, "arguments": json.dumps(args)}
            return completion({"role": "assistant", "content": None, "tool_calls": [call]})
        return completion({"role": "assistant", "content": turn.reply})

    return respond


def completion(message: dict[str, Any]) -> Reply:
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "airline-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return Reply(body=json.dumps(body))


def pydantic_ai_conversation(turns: tuple[Turn, ...], out: Path) -> Path:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))
    tools = (bookings_get, flights_search, bookings_rebook, payments_charge)

    async def converse(url: str) -> None:
        async with AsyncOpenAI(base_url=url, api_key="x") as client:
            model = OpenAIChatModel("airline-model", provider=OpenAIProvider(openai_client=client))
            agent = Agent(model, tools=tools)
            history = None
            for turn in turns:  # what a chat server does with each message it is sent
                result = await agent.run(
                    turn.user,
                    message_history=history,
                    conversation_id="rebook-conv" if history is None else None,
                )
                history = result.all_messages()

    with serve() as fake:
        fake.respond = scripted(turns)
        asyncio.run(converse(fake.url))
    out.write_text(MessageToJson(encode_spans(exporter.get_finished_spans())))
    return out


@pytest.fixture
def instrument_all(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Agent.instrument_all`` sets a default for every agent: undone after the test."""
    monkeypatch.setattr(Agent, "_instrument_default", Agent._instrument_default)


@pytest.mark.usefixtures("instrument_all")
@pytest.mark.parametrize(("turns", "code"), [(CAREFUL, 0), (LATE_FORBIDDEN, 1), (HASTY, 1)])
def test_a_pydantic_ai_conversation_is_graded_by_its_conversation_id(
    cli: Invoke, tmp_path: Path, turns: tuple[Turn, ...], code: int
) -> None:
    spans = pydantic_ai_conversation(turns, tmp_path / "spans.json")
    written = json.loads(spans.read_text())["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert len({s["traceId"] for s in written}) == len(turns)  # a trace per run
    suite_path = write(tmp_path / "suite.json", suite())
    mapped = write(tmp_path / "map.json", {"traces": {"rebook-conv": {"taskId": TASK}}})
    graded = cli("grade", str(suite_path), str(spans), "--map", str(mapped))
    assert graded.exit_code == code, graded.stdout + graded.stderr
    expected = [(call[0], i) for i, turn in enumerate(turns) for call in turn.calls]
    assert turns_of_calls(graded) == expected
    done = trial(graded)
    assert done["output"] == turns[-1].reply
    assert [e["user"] for e in done["conversation"]["exchanges"][1:]] == [t.user for t in turns[1:]]


# Who plays the user of a recording: the recording.


def test_a_simulated_user_does_not_play_a_recording(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No simulator model anywhere, no endpoint: the recorded user's messages are said."""
    for name in ("OPENWOP_EVAL_USER_MODEL", "OPENWOP_EVAL_JUDGE_MODEL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    simulated = {"simulator": {"model": "openai:", "persona": "A traveller", "goal": "Rebook"}}
    graded = grade(cli, tmp_path, chat_record(CAREFUL), suite(user=simulated))
    assert graded.exit_code == 0, graded.stdout + graded.stderr
    exchanges = trial(graded)["conversation"]["exchanges"]
    assert [e["user"] for e in exchanges[1:]] == [t.user for t in CAREFUL[1:]]


# Hostile recordings: bounded by the trace limits and maxTurns.


def test_thousands_of_turns_are_graded_as_out_of_turns_within_max_turns(
    cli: Invoke, tmp_path: Path
) -> None:
    chatter = tuple(Turn(f"message {i}", (GET,), "You are rebooked.") for i in range(5_000))
    graded = grade(cli, tmp_path, chat_record((*CAREFUL[:2], *chatter)))
    assert graded.exit_code == 1
    done = trial(graded)
    assert (done["conversation"]["turns"], done["conversation"]["ended"]) == (4, "max-turns")
    assert len(done["calls"]) == 5  # the turns past maxTurns are never played
    assert done["reasons"][-1]["rule"] == "turns-exhausted"


def test_a_huge_user_message_is_said_cut_to_the_user_message_limit(
    cli: Invoke, tmp_path: Path
) -> None:
    long = "Yes, the 9 am one please. " + "x" * 200_000
    turns = (CAREFUL[0], Turn(long, (REBOOK,), CAREFUL[1].reply), CAREFUL[2])
    graded = grade(cli, tmp_path, chat_record(turns))
    assert graded.exit_code == 0, graded.stdout
    events = [json.loads(line) for line in graded.events.read_text().splitlines()]
    said = [
        e["payload"]["content"]
        for e in events
        if e["type"] == "agent.message" and e["payload"]["role"] == "user"
    ]
    assert len(said[1]) == MAX_USER_MESSAGE_CHARS
    assert said[1].startswith("Yes, the 9 am one please. xxx")
    assert said[1].endswith("…")


def test_a_conversation_file_past_the_size_limit_is_a_located_problem(
    cli: Invoke, tmp_path: Path
) -> None:
    turns = tuple(Turn("y" * 10_000, (), "ok") for _ in range(2_000))
    graded = grade(cli, tmp_path, chat_record(turns))
    assert graded.exit_code == 2
    assert f"{tmp_path / 'trace.json'}: the file is " in graded.stderr
    assert "nothing was graded" in graded.stderr


def test_agent_invocations_by_the_thousand_are_read_in_linear_time(tmp_path: Path) -> None:
    recorder = Recorder()
    root = recorder.span("conversation", T0, T0 + 3_000 * 1000 * MS, None, {})
    for i in range(2_000):
        invocation(recorder, T0 + 1000 * MS * i, Turn(f"message {i}", (GET,), "ok"), root)
    export = recorder.export()
    path = write(tmp_path / "spans.json", export)
    (trace,), problems = read_trace_file(str(path))
    assert problems == []
    assert [c.turn for c in trace.calls] == list(range(2_000))
    assert len(trace.turns) == 2_000
    spans = export["resourceSpans"][0]["scopeSpans"][0]["spans"]
    for i, span in enumerate(spans):  # each span the child of the next: parents in a cycle
        span["parentSpanId"] = spans[(i + 1) % len(spans)]["spanId"]
    (trace,), problems = read_trace_file(str(write(path, export)))
    assert problems == []
    assert len(trace.calls) == 2_000
