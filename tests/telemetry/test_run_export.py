"""`run --otlp-endpoint`: a run's trials, tool calls and verdicts reach an OpenTelemetry
collector as GenAI-convention spans and `gen_ai.evaluation.result` events, read back here by
a real OTLP/HTTP receiver; content only when opted in; an export that fails changes
nothing of the run but a warning."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from openwop_eval.cli.main import main
from openwop_eval.telemetry.log_times import nanos
from tests.telemetry.receiver import Received, attributes, dump, evaluations

SUITE = "acme.support.evals.telemetry"
SECRETS = ("SECRET-ARGUMENT", "SECRET-RESULT", "SECRET-OUTPUT")
OPT_IN = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_CLEAN_ENV = {  # the runner's own environment must not decide these tests
    "OTEL_EXPORTER_OTLP_ENDPOINT": None,
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": None,
    "OTEL_SERVICE_NAME": None,
    OPT_IN: None,
}


def _task(task_id: str) -> dict[str, Any]:
    return {
        "taskId": task_id,
        "input": {},
        "expected": {
            "kind": "golden",
            "match": {"strategy": "exact", "value": "SECRET-OUTPUT"},
            "trajectory": {"steps": [{"tool": "crm:lookup"}], "forbidden": ["payments:*"]},
        },
        "fixtures": {
            "toolResponses": [
                {"tool": "crm:lookup", "response": {"name": "SECRET-RESULT"}},
                {"tool": "payments:refund", "response": {"refunded": True}},
            ]
        },
    }


def _lookup() -> dict[str, Any]:
    return {"tool": "crm:lookup", "args": {"customer": "SECRET-ARGUMENT"}}


AGENT = {
    "agentId": "support-bot",
    "tasks": {
        "right-path": [{"output": "SECRET-OUTPUT", "toolCalls": [_lookup()]}],
        # the right answer on a forbidden path: its reported score stays 1, its gated score 0
        "wrong-path": [
            {
                "output": "SECRET-OUTPUT",
                "toolCalls": [_lookup(), {"tool": "payments:refund", "args": {"amount": 5}}],
            }
        ],
    },
}


@pytest.fixture
def run_files(tmp_path: Path) -> Path:
    suite = {
        "suiteId": SUITE,
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 1},
        "tasks": [_task("right-path"), _task("wrong-path")],
    }
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    (tmp_path / "agent.json").write_text(json.dumps(AGENT))
    return tmp_path


def _run(where: Path, *extra: str, env: dict[str, str | None] | None = None) -> Result:
    argv = [
        "run", str(where / "suite.json"), "--agent", f"scripted:{where / 'agent.json'}",
        "--quiet", "--store", f"sqlite:///{where / 'store.sqlite'}",
        "--events", str(where / "events.jsonl"), "--out", str(where / "summary.json"), *extra,
    ]  # fmt: skip
    return CliRunner().invoke(main, argv, env={**_CLEAN_ENV, **(env or {})})


def _events(where: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (where / "events.jsonl").read_text().splitlines()]


def _trial(received: Received, task_id: str) -> dict[str, Any]:
    (span,) = [s for s in received.named("invoke_agent ") if _task_of(s) == task_id]
    return span


def _task_of(span: dict[str, Any]) -> Any:
    return attributes(span).get("openwop_eval.task.id")


def test_the_run_is_one_trace_of_tasks_trials_and_tool_calls(
    run_files: Path, receiver: tuple[str, Received]
) -> None:
    url, received = receiver
    result = _run(run_files, "--otlp-endpoint", url)
    assert result.exit_code == 1, result.output  # the wrong path fails the suite
    assert set(received.paths) == {"/v1/traces"}
    assert "traces: 2 trial(s) of run" in result.stderr
    run = received.one(f"eval_run {SUITE}")
    assert "parentSpanId" not in run
    assert {s["traceId"] for s in received.spans} == {run["traceId"]}
    tasks = received.children(run)
    assert sorted(s["name"] for s in tasks) == ["eval_task right-path", "eval_task wrong-path"]
    for task in tasks:
        (trial,) = received.children(task)
        assert trial["name"] == "invoke_agent support-bot"
        assert attributes(trial) | {"openwop_eval.invocation.id": "-"} == {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.id": "support-bot",
            "gen_ai.agent.name": "support-bot",
            "openwop_eval.task.id": _task_of(task),
            "openwop_eval.trial.index": 0,
            "openwop_eval.invocation.id": "-",
            "openwop_eval.outcome": "passed" if _task_of(task) == "right-path" else "failed",
            "openwop_eval.score": 1.0,
            "openwop_eval.gated_score": 1.0 if _task_of(task) == "right-path" else 0.0,
        }
    tools = received.children(_trial(received, "wrong-path"))
    assert [s["name"] for s in tools] == ["execute_tool crm:lookup", "execute_tool payments:refund"]
    assert attributes(tools[1]) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "payments:refund",
        "gen_ai.tool.call.id": attributes(tools[1])["gen_ai.tool.call.id"],
    }
    called = [e for e in _events(run_files) if e["type"] == "agent.tool-called"]
    assert {attributes(s)["gen_ai.tool.call.id"] for s in received.named("execute_tool")} == {
        e["payload"]["callId"] for e in called
    }
    assert received.resources[0]["attributes"][-1] == {
        "key": "service.name",
        "value": {"stringValue": "openwop-eval"},
    }


def test_the_verdicts_are_evaluation_events_with_gated_scores(
    run_files: Path, receiver: tuple[str, Received]
) -> None:
    url, received = receiver
    assert _run(run_files, "--otlp-endpoint", url).exit_code == 1
    assert evaluations(_trial(received, "right-path")) == [
        {
            "gen_ai.evaluation.name": "openwop_eval.trial",
            "gen_ai.evaluation.score.value": 1.0,
            "gen_ai.evaluation.score.label": "passed",
        }
    ]
    wrong = _trial(received, "wrong-path")
    assert evaluations(wrong) == [
        {
            "gen_ai.evaluation.name": "openwop_eval.trial",
            "gen_ai.evaluation.score.value": 0.0,  # gated: the path was wrong
            "gen_ai.evaluation.score.label": "failed",
            "gen_ai.evaluation.explanation": "forbidden",
        }
    ]
    assert wrong["status"] == {"code": "STATUS_CODE_ERROR"}
    assert evaluations(received.one("eval_task wrong-path"))[0][
        "gen_ai.evaluation.score.label"
    ] == ("failed")
    run = received.one(f"eval_run {SUITE}")
    summary = json.loads((run_files / "summary.json").read_text())
    assert attributes(run) | {"openwop_eval.run.id": "-"} == {
        "openwop_eval.run.id": "-",
        "openwop_eval.suite.id": SUITE,
        "openwop_eval.suite.version": "1.0.0",
        "openwop_eval.passed": False,
        "openwop_eval.gate.passed": False,
        "openwop_eval.aggregate_score": summary["aggregateScore"],
        "openwop_eval.gated_aggregate_score": summary["gatedAggregateScore"],
        "openwop_eval.task_count": 2,
        "openwop_eval.passed_count": 1,
    }
    (suite_event,) = evaluations(run)
    assert suite_event["gen_ai.evaluation.score.value"] == summary["gatedAggregateScore"] == 0.5
    assert suite_event["gen_ai.evaluation.score.label"] == "failed"


def test_span_times_are_the_events_times(run_files: Path, receiver: tuple[str, Received]) -> None:
    url, received = receiver
    _run(run_files, "--otlp-endpoint", url)
    events = _events(run_files)
    first = next(e for e in events if e["type"] == "agent.invocation-started")
    trial = _trial(received, first["payload"]["x-openwop-eval"]["taskId"])
    assert int(trial["startTimeUnixNano"]) == nanos(first["timestamp"])
    called = next(e for e in events if e["type"] == "agent.tool-called")
    tool = next(
        s
        for s in received.named("execute_tool")
        if attributes(s)["gen_ai.tool.call.id"] == called["payload"]["callId"]
    )
    assert int(tool["startTimeUnixNano"]) == nanos(called["timestamp"])
    run = received.one(f"eval_run {SUITE}")
    assert int(run["startTimeUnixNano"]) == nanos(events[0]["timestamp"])
    assert int(run["endTimeUnixNano"]) == nanos(events[-1]["timestamp"])


def test_no_content_leaves_unless_opted_in(run_files: Path, receiver: tuple[str, Received]) -> None:
    url, received = receiver
    _run(run_files, "--otlp-endpoint", url)
    body = b"".join(received.bodies)
    assert body
    assert not [s for s in SECRETS if s.encode() in body], dump(received)
    assert not [s for s in received.spans if "gen_ai.tool.call.arguments" in attributes(s)]


def test_opted_in_content_follows_the_conventions(
    run_files: Path, receiver: tuple[str, Received]
) -> None:
    url, received = receiver
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": url, OPT_IN: "true", "OTEL_SERVICE_NAME": "my-evals"}
    assert _run(run_files, env=env).exit_code == 1  # the endpoint from the environment
    lookup = attributes(received.children(_trial(received, "right-path"))[0])
    assert json.loads(lookup["gen_ai.tool.call.arguments"]) == {"customer": "SECRET-ARGUMENT"}
    assert json.loads(lookup["gen_ai.tool.call.result"]) == {"name": "SECRET-RESULT"}
    output = json.loads(attributes(_trial(received, "right-path"))["gen_ai.output.messages"])
    assert output == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "SECRET-OUTPUT"}],
            "finish_reason": "stop",
        }
    ]
    assert {"key": "service.name", "value": {"stringValue": "my-evals"}} in (
        received.resources[0]["attributes"]
    )


def _measured_out(value: Any) -> Any:
    """A summary without its latencies, which differ between any two runs."""
    if isinstance(value, dict):
        return {k: _measured_out(v) for k, v in value.items() if "latency" not in k.lower()}
    if isinstance(value, list):
        return [_measured_out(v) for v in value]
    return value


@pytest.fixture
def refusing_url() -> Iterator[str]:
    """A loopback port bound but not listening: every connection is refused."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{bound.getsockname()[1]}"


def test_the_flag_wins_over_the_environment(
    run_files: Path, receiver: tuple[str, Received], refusing_url: str
) -> None:
    url, received = receiver
    result = _run(
        run_files, "--otlp-endpoint", url, env={"OTEL_EXPORTER_OTLP_ENDPOINT": refusing_url}
    )
    assert "warning" not in result.stderr
    assert received.one(f"eval_run {SUITE}")


def test_an_unreachable_endpoint_changes_nothing_but_a_warning(
    run_files: Path, refusing_url: str
) -> None:
    agent = {**AGENT, "tasks": {**AGENT["tasks"], "wrong-path": AGENT["tasks"]["right-path"]}}
    (run_files / "agent.json").write_text(json.dumps(agent))  # a run that passes
    plain = _run(run_files)
    expected = _measured_out(json.loads((run_files / "summary.json").read_text()))
    exported = _run(
        run_files, "--otlp-endpoint", refusing_url, env={"OTEL_EXPORTER_OTLP_TIMEOUT": "1"}
    )
    assert plain.exit_code == exported.exit_code == 0, exported.output
    assert _measured_out(json.loads((run_files / "summary.json").read_text())) == expected
    assert "warning: the run's traces were not exported to" in exported.stderr
    assert f"{refusing_url}/v1/traces" in exported.stderr
    assert "(the verdict and exit code stand)" in exported.stderr
    assert "Traceback" not in exported.output
    run_id = re.compile(r"run local/\w+")
    assert run_id.sub("RUN", plain.stdout) == run_id.sub("RUN", exported.stdout)


def test_a_malformed_endpoint_is_a_usage_error_before_the_run(run_files: Path) -> None:
    result = _run(run_files, "--otlp-endpoint", "localhost:4318")
    assert result.exit_code == 2
    assert "'localhost:4318' is not an http:// or https:// URL with a host" in result.output
    assert not (run_files / "events.jsonl").exists()


def test_without_the_otlp_extra_the_run_stands_and_says_what_to_install(
    run_files: Path, receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = receiver
    monkeypatch.setitem(sys.modules, "openwop_eval.telemetry.export", None)  # not installed
    result = _run(run_files, "--otlp-endpoint", url)
    assert result.exit_code == 1
    assert "pip install 'openwop-eval[otlp]'" in result.stderr
    assert not received.spans


def test_a_run_that_exports_nothing_loads_no_opentelemetry(run_files: Path) -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from openwop_eval.cli.main import main\n"
        f"argv = ['run', {str(run_files / 'suite.json')!r}, '--agent',"
        f" 'scripted:' + {str(run_files / 'agent.json')!r}, '--quiet',"
        f" '--store', 'sqlite:///' + {str(run_files / 'store.sqlite')!r}]\n"
        "result = CliRunner().invoke(main, argv)\n"
        "print(result.exit_code, sorted({m.split('.')[1] for m in sys.modules"
        " if m.startswith('opentelemetry.')}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in _CLEAN_ENV}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert done.stdout.split() == ["1", "[]"], done.stderr
