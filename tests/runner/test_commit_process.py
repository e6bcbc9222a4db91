"""Committing in a forked process: the same log, summary and verdict as the committer
thread; a child that dies leaves the run open for a resume, which completes it; a batch the
store refuses ends the run as failed with its log whole; cancelling ends it cancelled."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import threading
from multiprocessing import Pipe
from pathlib import Path
from typing import Any

import pytest

from openwop_eval import parse_suite
from openwop_eval.agents import AgentReply
from openwop_eval.log.audit import verify_log
from openwop_eval.runner import commit_process
from openwop_eval.runner.api import resume_async, run_suite_async
from openwop_eval.runner.run import RunOptions
from openwop_eval.runner.trial import GradedTrial
from openwop_eval.store import Store, StoreError
from openwop_eval.store.fork import ForkGate

TASKS = 12
TRIALS = 5


def suite() -> dict[str, Any]:
    def task(i: int) -> dict[str, Any]:
        return {
            "taskId": f"t{i:02d}",
            "input": {"i": i},
            "expected": {
                "kind": "golden",
                "match": {"strategy": "exact", "value": "done"},
                "trajectory": {"steps": [{"tool": "crm:lookup"}], "forbidden": ["accounts:delete"]},
            },
            "fixtures": {
                "toolResponses": [
                    {"tool": "crm:lookup", "response": {"i": i}},
                    {"tool": "accounts:delete", "response": {}},
                ]
            },
        }

    return {
        "suiteId": "test.openwop.evals.commitprocess",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 0.9},
        "trials": {"count": TRIALS, "passRule": "mean"},
        "tasks": [task(i) for i in range(TASKS)],
    }


class Agent:
    """Deterministic: task 3 takes a forbidden path on trial 2; odd trials of task 5 answer
    wrong. ``hook`` runs before each trial's reply, with the number of trials begun."""

    agent_id = "test.commit-process"

    def __init__(self, hook: Any = None) -> None:
        self.hook, self.begun = hook, 0

    async def run(self, context: Any, port: Any) -> AgentReply:
        self.begun += 1
        if self.hook is not None:
            await self.hook(self.begun, context)
        await port.call("crm:lookup", {"i": context.input["i"]})
        if context.input["i"] == 3 and context.trial == 2:
            await port.call("accounts:delete", {})
        wrong = context.input["i"] == 5 and context.trial % 2
        return AgentReply("wrong" if wrong else "done", latency_ms=context.trial)


def run(
    tmp_path: Path, name: str, committer: str, agent: Agent, **kwargs: Any
) -> tuple[Any, Store, Path]:
    os.environ[commit_process.SETTING] = committer
    try:
        store = Store(f"sqlite:///{tmp_path / (name + '.sqlite')}")
        path = tmp_path / f"{name}.jsonl"
        with open(path, "w", encoding="utf-8") as events:
            result = asyncio.run(
                run_suite_async(
                    parse_suite(suite()),
                    agent,
                    store=store,
                    events=events,
                    options=RunOptions(concurrency=4),
                    **kwargs,
                )
            )
        return result, store, path
    finally:
        del os.environ[commit_process.SETTING]


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the commit processes started in the test."""
    started: list[int] = []
    original = commit_process.ProcessCommitter.start.__func__  # type: ignore[attr-defined]

    def start(cls: Any, *args: Any, **kwargs: Any) -> Any:
        made = original(cls, *args, **kwargs)
        if made is not None:
            started.append(made._pid)
        return made

    monkeypatch.setattr(commit_process.ProcessCommitter, "start", classmethod(start))
    return started


def scored(store: Store, run_id: str) -> list[tuple[str, int, Any, bool]]:
    return sorted(
        (
            e["payload"]["taskId"],
            e["payload"]["x-openwop-eval"]["trial"],
            e["payload"]["score"],
            e["payload"]["passed"],
        )
        for e in store.events(run_id)
        if e["type"] == "eval.scored"
    )


def test_a_process_commits_what_the_thread_commits(tmp_path: Path, forks: list[int]) -> None:
    seen: list[GradedTrial] = []

    class Observer:
        def started(self, run_id: str, total: int, done: int) -> None:
            pass

        def finished(self, outcome: GradedTrial) -> None:
            seen.append(outcome)

    threaded, thread_store, _ = run(tmp_path, "thread", "thread", Agent())
    assert forks == []
    forked, store, path = run(tmp_path, "process", "process", Agent(), observer=Observer())
    assert len(forks) == 1
    assert forks[0] != os.getpid()

    assert forked.summary == threaded.summary
    failed = {task["taskId"] for task in forked.summary["tasks"] if not task["passed"]}
    assert failed == {"t03", "t05"}  # task 3's forbidden call, task 5's wrong answers
    assert scored(store, forked.run_id) == scored(thread_store, threaded.run_id)
    log = store.events(forked.run_id)
    assert [e["sequence"] for e in log] == list(range(len(log)))
    assert [e["type"] for e in log] == [e["type"] for e in thread_store.events(threaded.run_id)]
    # The same diagnostics of every trial, encoded by the parent and stored by the child.
    ours, theirs = store.trial_results(forked.run_id), thread_store.trial_results(threaded.run_id)
    assert ours.keys() == theirs.keys()
    assert len(ours) == TASKS * TRIALS
    for key, diagnostics in ours.items():
        assert diagnostics.pop("invocationId") != theirs[key].pop("invocationId")
        assert diagnostics == theirs[key]
    file = path.read_text().splitlines()  # the file got every event, in order, as stored
    assert file == [row.text for row in store.iter_event_rows(forked.run_id)]
    checked = verify_log(parse_suite(suite()).suite, log, forked.summary)
    assert checked.agrees
    assert not checked.log_problems
    # The observer got every trial, whole (its events and diagnostics too).
    assert len(seen) == TASKS * TRIALS
    assert all(o.events[-1].type == "eval.scored" and "calls" in o.diagnostics for o in seen)
    assert store.get_run(forked.run_id).status == "completed"  # type: ignore[union-attr]


def _children() -> list[int]:
    pid = os.getpid()
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(child) for child in text.split()]


def test_a_killed_commit_process_leaves_the_run_open_and_a_resume_completes_it(
    tmp_path: Path, forks: list[int]
) -> None:
    async def kill_once(begun: int, context: Any) -> None:
        if begun == 25:
            for child in _children():
                if child in forks:
                    os.kill(child, signal.SIGKILL)

    with pytest.raises(commit_process.CommitProcessError, match="--resume"):
        run(tmp_path, "killed", "process", Agent(kill_once))
    store = Store(f"sqlite:///{tmp_path / 'killed.sqlite'}")
    (record,) = store.list_runs()
    assert record.status == "running"  # left open, as a crash leaves it: nothing is lost
    log = store.events(record.run_id)
    assert [e["sequence"] for e in log] == list(range(len(log)))
    assert log[-1]["type"] != "run.failed"
    assert len(scored(store, record.run_id)) < TASKS * TRIALS

    os.environ[commit_process.SETTING] = "process"
    try:
        asyncio.run(resume_async(record.run_id, store=store, agent=Agent()))
    finally:
        del os.environ[commit_process.SETTING]
    threaded, thread_store, _ = run(tmp_path, "thread", "thread", Agent())
    assert scored(store, record.run_id) == scored(thread_store, threaded.run_id)  # each once
    assert store.get_run(record.run_id).summary == threaded.summary  # type: ignore[union-attr]


def test_a_cancelled_run_ends_cancelled_after_what_the_process_committed(
    tmp_path: Path, forks: list[int]
) -> None:
    halfway = threading.Event()

    async def stall(begun: int, context: Any) -> None:
        if begun >= 30:
            halfway.set()
            await asyncio.sleep(3600)  # held until cancelled

    async def main() -> None:
        os.environ[commit_process.SETTING] = "process"
        try:
            store = Store(f"sqlite:///{tmp_path / 'cancelled.sqlite'}")
            task = asyncio.ensure_future(
                run_suite_async(parse_suite(suite()), Agent(stall), store=store)
            )
            while not halfway.is_set():
                await asyncio.sleep(0.01)  # waiting for the agent, not timing it
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        finally:
            del os.environ[commit_process.SETTING]

    asyncio.run(main())
    assert len(forks) == 1
    store = Store(f"sqlite:///{tmp_path / 'cancelled.sqlite'}")
    (record,) = store.list_runs()
    log = store.events(record.run_id)
    assert record.status == "cancelled"
    assert [e["sequence"] for e in log] == list(range(len(log)))
    assert log[-1]["type"] == "run.cancelled"
    assert 0 < len(scored(store, record.run_id)) < 30


@pytest.mark.parametrize("committer", ["thread", "process"])
def test_a_batch_the_store_refuses_fails_the_run_with_no_gap_in_its_log(
    tmp_path: Path, committer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    append = Store.append

    def failing(self: Store, run_id: str, docs: Any, trials: Any = (), within: Any = None) -> None:
        if any(task == "t07" for task, *_ in trials):  # in whichever process commits it
            raise StoreError("the disk is full")
        append(self, run_id, docs, trials, within)

    monkeypatch.setattr(Store, "append", failing)
    with pytest.raises(StoreError):
        run(tmp_path, committer, committer, Agent())
    store = Store(f"sqlite:///{tmp_path / (committer + '.sqlite')}")
    (record,) = store.list_runs()
    log = store.events(record.run_id)
    assert record.status == "failed"
    assert [e["sequence"] for e in log] == list(range(len(log)))  # the refused batch: no gap
    assert log[-1]["type"] == "run.failed"
    assert log[-1]["payload"]["error"]["code"] == "store_error"
    assert all(task != "t07" for task, *_ in scored(store, record.run_id))


def test_a_child_that_cannot_reach_the_store_leaves_the_work_to_the_thread(
    tmp_path: Path, forks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Store) -> None:
        raise StoreError("no connection in the child")

    monkeypatch.setattr(Store, "detach_in_child", broken)  # runs only in a forked child
    result, store, _ = run(tmp_path, "fallback", "process", Agent())
    threaded, thread_store, _ = run(tmp_path, "thread", "thread", Agent())
    assert forks == []  # the child was killed and the thread committed the run
    assert result.summary == threaded.summary
    assert scored(store, result.run_id) == scored(thread_store, threaded.run_id)


def test_a_process_is_forked_only_where_it_is_safe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    allowed = commit_process.fork_allowed
    monkeypatch.delenv(commit_process.SETTING, raising=False)
    store = Store(f"sqlite:///{tmp_path / 's.sqlite'}")
    many = commit_process.MIN_TRIALS
    with open(tmp_path / "events.jsonl", "w", encoding="utf-8") as file:
        assert allowed(store, file, hosted=False, to_run=many)  # auto, the default
        assert not allowed(store, file, hosted=False, to_run=many - 1)
        assert allowed(store, file, hosted=False, to_run=many, setting="auto")
        assert allowed(store, None, hosted=False, to_run=1, setting="process")
        assert not allowed(store, file, hosted=False, to_run=many - 1, setting="auto")
        assert not allowed(store, file, hosted=False, to_run=many, setting="thread")
        assert not allowed(store, file, hosted=True, to_run=many, setting="process")
    with pytest.warns(UserWarning, match="'proces' is not thread, process or auto"):
        assert not allowed(store, None, hosted=False, to_run=many, setting="proces")
    assert not allowed(store, io.StringIO(), hosted=False, to_run=many, setting="process")
    assert not allowed(Store("sqlite://"), None, hosted=False, to_run=many, setting="process")


def test_a_fork_waits_for_store_work_and_holds_new_work_back() -> None:
    gate = ForkGate()
    inside, leave, entered = threading.Event(), threading.Event(), threading.Event()

    def work() -> None:
        with gate.shared():
            inside.set()
            leave.wait(30)

    worker = threading.Thread(target=work)
    worker.start()
    inside.wait(30)
    with gate.alone(0.05) as alone:
        assert alone is False  # the work did not end in time: nothing is held back
    leave.set()
    worker.join(30)
    with gate.alone(30) as alone:
        assert alone is True

        def later() -> None:
            with gate.shared():
                entered.set()

        waiting = threading.Thread(target=later)
        waiting.start()
        assert not entered.wait(0.1)  # held back while the fork is under way
    assert entered.wait(30)
    waiting.join(30)


def test_a_message_that_does_not_unpickle_ends_the_stream_not_the_reader() -> None:
    ours, theirs = Pipe()
    theirs.send_bytes(b"\x80\x05 not a pickle")  # as a half-written or damaged message reads
    assert commit_process._receive(ours) is None
    theirs.close()
    assert commit_process._receive(ours) is None  # the end of the stream, as before
