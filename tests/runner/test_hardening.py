"""What an agent returns, and how a run ends, can never leak content or lose the run:
outputs that are not JSON error their trial, run-level errors are content-free, a run that
cannot be restored as it was started is ended, and the run id is printed at once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from openwop_eval import parse_suite
from openwop_eval.agents import AgentReply
from openwop_eval.runner.api import run_suite_async
from openwop_eval.runner.ending import STORE_FAILED
from openwop_eval.store import Store, StoreError
from tests.runner.conftest import Ran, write

CANARY = "canary-7f3a9c"

AGENT = """
from openwop_eval.agents import AgentReply

def agent(input, tools):
    tools.call("crm:lookup", {"id": 1})
    mode = input["mode"]
    if mode == "set":
        return {"a", "b"}
    if mode == "nan-cost":
        return AgentReply(output="ok", cost_usd=float("nan"))
    if mode == "text-cost":
        return AgentReply(output="ok", cost_usd="1")
    return "ok"
"""


def suite(*modes: str) -> dict[str, Any]:
    return {
        "suiteId": "test.openwop.evals.hardening",
        "version": "1.0.0",
        "modes": ["golden"],
        "trials": {"count": 2},
        "tasks": [
            {
                "taskId": mode,
                "input": {"mode": mode},
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "ok"}},
                "fixtures": {
                    "toolResponses": [
                        {"tool": "crm:lookup", "response": {"note": CANARY}},
                        {"tool": "crm:lookup", "response": {"note": CANARY}},
                    ]
                },
            }
            for mode in modes
        ],
    }


def test_an_output_that_is_not_json_errors_its_trial_and_the_run_goes_on(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    path = write(tmp_path / "suite.json", suite("set", "nan-cost", "text-cost", "plain"))
    agent = write(tmp_path / "agent.py", AGENT)
    ran = run_cli(str(path), "--agent", f"{agent}:agent")
    assert ran.exit_code == 1, ran.stderr  # completed, not passed: no store error, no exit 3
    assert ran.summary is not None
    by_task = {t["taskId"]: t for t in ran.summary["tasks"]}
    assert [by_task[m]["passed"] for m in ("set", "nan-cost", "text-cost", "plain")] == [
        False,
        False,
        False,
        True,
    ]
    assert ran.report is not None
    errors = {
        t["taskId"]: t["trials"][0]["error"] for t in ran.report["tasks"] if t["taskId"] != "plain"
    }
    assert "not a JSON value" in errors["set"]
    assert "costUsd must be a finite number" in errors["nan-cost"]
    assert "costUsd must be a number" in errors["text-cost"]


class _FailingStore(Store):
    """A store whose trial commits fail with a database error quoting the data."""

    def append(self, run_id: str, docs: Any, trials: Any = (), within: Any = None) -> None:
        if trials:
            raise StoreError(f"store error: (sqlite3.OperationalError) [parameters: {CANARY}]")
        super().append(run_id, docs, trials, within)


def test_a_run_level_error_is_content_free(tmp_path: Path) -> None:
    store = _FailingStore(f"sqlite:///{tmp_path / 's.sqlite'}")
    loaded = parse_suite(suite("plain"))

    async def agent(request: Any, tools: Any) -> AgentReply:
        await tools.call("crm:lookup", {"id": CANARY})
        return AgentReply(output=CANARY)

    with pytest.raises(StoreError):
        asyncio.run(run_suite_async(loaded, _python_agent(agent), store=store))
    (run,) = store.list_runs()
    assert run.status == "failed"
    assert run.error == STORE_FAILED.message
    failed = [e for e in store.events(run.run_id) if e["type"] == "run.failed"]
    assert [e["payload"]["error"] for e in failed] == [STORE_FAILED.as_error()]
    assert CANARY not in json.dumps(store.events(run.run_id))


def _python_agent(fn: Any) -> Any:
    from openwop_eval.agents.python import PythonAgent

    return PythonAgent(fn, agent_id="test.agent")


def test_a_run_without_a_stored_fixture_source_is_ended_not_continued(
    tmp_path: Path, run_cli: Callable[..., Ran], store: Store
) -> None:
    path = write(tmp_path / "suite.json", suite("plain"))
    agent = write(tmp_path / "agent.py", AGENT)
    assert run_cli(str(path), "--agent", f"{agent}:agent").exit_code == 0
    (done,) = store.list_runs()
    # A run as a store from before fixture sources were kept holds it: open, no source.
    with store.transaction() as tx:
        from openwop_eval.store.schema import events, runs

        ending = events.c.type.in_(["eval.completed", "run.completed"])
        tx.execute(events.delete().where((events.c.run_id == done.run_id) & ending))
        tx.execute(
            runs.update()
            .where(runs.c.run_id == done.run_id)
            .values(status="running", fixture_source=None)
        )
    resumed = run_cli("--resume", done.run_id)
    assert resumed.exit_code == 3
    assert "fixture source cannot be read back" in resumed.stderr
    after = store.get_run(done.run_id)
    assert after is not None
    assert after.status == "failed"
    assert store.events(done.run_id)[-1]["payload"]["error"]["code"] == "fixture_source_lost"


def test_a_resume_takes_no_other_fixtures(run_cli: Callable[..., Ran]) -> None:
    ran = run_cli("--resume", "local/abc", "--fixtures-from", "other.jsonl")
    assert ran.exit_code == 2
    assert "serves the fixtures it was started with" in ran.stderr


def test_the_run_id_is_printed_when_the_run_starts(
    tmp_path: Path, run_cli: Callable[..., Ran], store: Store
) -> None:
    path = write(tmp_path / "suite.json", suite("plain"))
    agent = write(tmp_path / "agent.py", AGENT)
    ran = run_cli(str(path), "--agent", f"{agent}:agent")
    (run,) = store.list_runs()
    first = ran.stderr.splitlines()[0]
    assert first.startswith(f"run {run.run_id}: 2 trials to run")
    assert f"openwop-eval run --resume {run.run_id}" in first


def test_grading_and_committing_run_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from openwop_eval.runner import trial as trial_module

    threads: list[tuple[str, str]] = []

    def spy(name: str, real: Any) -> Any:
        def wrapped(*args: Any) -> Any:
            threads.append((name, threading.current_thread().name))
            return real(*args)

        return wrapped

    monkeypatch.setattr(trial_module, "grade_trial", spy("grade", trial_module.grade_trial))
    monkeypatch.setattr(Store, "append", spy("commit", Store.append))

    async def agent(request: Any, tools: Any) -> str:
        await tools.call("crm:lookup", {"id": 1})
        return "ok"

    async def main() -> str:
        store = Store(f"sqlite:///{tmp_path / 's.sqlite'}")
        await run_suite_async(parse_suite(suite("plain")), _python_agent(agent), store=store)
        return threading.current_thread().name

    loop_thread = asyncio.run(main())
    assert [name for name, _ in threads].count("grade") == 2  # the two trials
    assert "commit" in [name for name, _ in threads]
    assert loop_thread not in {thread for _, thread in threads}
