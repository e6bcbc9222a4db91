"""Transient store failures: which they are, a commit retried exactly once, a run the store
cannot record left open (not failed) and resumed, a SQLite file that vanished."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st

from openwop_eval.agents import AgentReply
from openwop_eval.files.suites import load_suite
from openwop_eval.log import verify_log
from openwop_eval.runner import RunOptions
from openwop_eval.runner.api import resume_async, run_suite_async
from openwop_eval.store import EventRow, RunRecord, Store, StoreError, StoreUnavailableError
from openwop_eval.store.checkpoint import WalCheckpointer
from openwop_eval.store.retry import MAX_PAUSE_S, pause, transient


def _wrapped(orig: BaseException, kind: type[sa.exc.DBAPIError] = sa.exc.OperationalError) -> Any:
    return kind("INSERT INTO events VALUES (?)", ("a tool argument",), orig)


@pytest.mark.parametrize(
    "orig",
    [
        sqlite3.OperationalError("database is locked"),
        sqlite3.OperationalError("database or disk is full"),
        sqlite3.OperationalError("disk I/O error"),
        sqlite3.OperationalError("attempt to write a readonly database"),
        psycopg.errors.SerializationFailure(),
        psycopg.errors.DeadlockDetected(),
        psycopg.errors.LockNotAvailable(),
        psycopg.errors.QueryCanceled(),
        psycopg.errors.AdminShutdown(),
        psycopg.OperationalError("consuming input failed: server closed the connection"),
    ],
    ids=repr,
)
def test_a_blip_is_transient(orig: BaseException) -> None:
    assert transient(_wrapped(orig))


def test_a_pool_with_no_free_connection_in_time_is_transient() -> None:
    assert transient(sa.exc.TimeoutError("QueuePool limit of size 5 overflow 10 reached"))


@pytest.mark.parametrize(
    ("orig", "kind"),
    [
        (sqlite3.IntegrityError("UNIQUE constraint failed"), sa.exc.IntegrityError),
        (psycopg.errors.UniqueViolation(), sa.exc.IntegrityError),
        (psycopg.errors.NumericValueOutOfRange(), sa.exc.DataError),
        (psycopg.errors.UntranslatableCharacter(), sa.exc.DataError),
        (sqlite3.OperationalError("no such table: runs"), sa.exc.OperationalError),
    ],
    ids=repr,
)
def test_the_operations_own_fault_is_not_transient(
    orig: BaseException, kind: type[sa.exc.DBAPIError]
) -> None:
    assert not transient(_wrapped(orig, kind))


@given(st.integers(min_value=0, max_value=10_000))
def test_the_pause_grows_and_is_bounded(attempt: int) -> None:
    assert 0 < pause(attempt) <= MAX_PAUSE_S
    assert pause(attempt) <= pause(attempt + 1)


def _record(run_id: str) -> RunRecord:
    return RunRecord(
        run_id, "acme", "running", "a.b.evals.c", "1.0.0", "scripted:x", "agent", {"suiteId": "x"}
    )


def _row(sequence: int) -> EventRow:
    return EventRow.of(
        {
            "eventId": f"ev-{sequence}",
            "runId": "r1",
            "type": "x.y",
            "payload": {},
            "timestamp": "2026-01-01T00:00:00Z",
            "sequence": sequence,
            "schemaVersion": 1,
        }
    )


@contextlib.contextmanager
def _answer_lost(store: Store, times: int) -> Iterator[list[int]]:
    """The next ``times`` transactions commit, then fail as if their answer was lost."""
    real, count = store.transaction, [0]

    @contextlib.contextmanager
    def lossy() -> Iterator[sa.engine.Connection]:
        with real() as tx:
            yield tx
        if count[0] < times:
            count[0] += 1
            raise StoreUnavailableError("the connection broke as the commit was answered")

    store.transaction = lossy  # type: ignore[method-assign]
    try:
        yield count
    finally:
        store.transaction = real  # type: ignore[method-assign]


def test_a_commit_whose_answer_was_lost_is_retried_and_kept_once(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 's.sqlite'}")
    with _answer_lost(store, 1) as lost:
        store.create_run(_record("r1"), [_row(0)])
    assert lost == [1]
    with _answer_lost(store, 2) as lost:
        store.append("r1", [_row(1), _row(2)], [("t", 0, "inv", {"a": 1})])
    assert lost == [2]
    assert [e["sequence"] for e in store.events("r1")] == [0, 1, 2]
    assert list(store.trial_results("r1")) == [("t", 0)]
    store.close()


def test_a_store_away_past_the_retries_raises_unavailable_and_keeps_nothing(
    tmp_path: Path,
) -> None:
    store = Store(f"sqlite:///{tmp_path / 's.sqlite'}")
    store.create_run(_record("r1"), [_row(0)])
    store.retry_s = 0.2
    real = store.transaction

    @contextlib.contextmanager
    def away() -> Iterator[sa.engine.Connection]:
        with real() as tx:
            tx.execute(sa.text("SELECT 1"))
            raise sa.exc.OperationalError("COMMIT", {}, sqlite3.OperationalError("disk I/O error"))
            yield tx

    store.transaction = away  # type: ignore[method-assign]
    with pytest.raises(StoreUnavailableError) as raised:
        store.append("r1", [_row(1)])
    store.transaction = real  # type: ignore[method-assign]
    assert "disk I/O" not in str(raised.value)  # content-free: the cause is for the log
    assert store.last_sequence("r1") == 0
    store.close()


SUITE: dict[str, Any] = {
    "suiteId": "test.acme.evals.blip",
    "version": "1.0.0",
    "modes": ["golden"],
    "thresholds": {"passScore": 1},
    "trials": {"count": 6, "passRule": "mean"},
    "tasks": [
        {
            "taskId": "t",
            "input": {},
            "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "ok"}},
        }
    ],
}


class Agent:
    agent_id = "test.blip"

    async def run(self, context: Any, port: Any) -> AgentReply:
        return AgentReply(output="ok", latency_ms=1)


class Away:
    """Trial commits fail with the store away while ``away`` is set; the rest passes (so
    the old ending, ``run.failed``, would have been recorded)."""

    def __init__(self, store: Store) -> None:
        self.away, self.real = False, store.append
        store.append = self.append  # type: ignore[method-assign]

    def append(self, run_id: str, docs: Any, trials: Any = (), within: Any = None) -> None:
        if self.away and trials:
            raise StoreUnavailableError("the store is unavailable for now")
        self.real(run_id, docs, trials, within)


def test_a_run_the_store_cannot_record_is_left_open_and_resumes(tmp_path: Path) -> None:
    (tmp_path / "suite.json").write_text(json.dumps(SUITE))
    store = Store(f"sqlite:///{tmp_path / 's.sqlite'}")
    fault = Away(store)
    fault.away = True
    options = RunOptions(concurrency=1)
    with pytest.raises(StoreUnavailableError):
        asyncio.run(run_suite_async(tmp_path / "suite.json", Agent(), store=store, options=options))
    (run,) = store.list_runs()
    assert run.status == "running"  # open, not failed: the failure was not the run's
    assert [e["type"] for e in store.events(run.run_id)] == ["run.started", "eval.started"]
    fault.away = False
    result = asyncio.run(resume_async(run.run_id, store=store, agent=Agent()))
    assert result.summary["passed"] is True
    assert store.get_run(run.run_id).status == "completed"  # type: ignore[union-attr]
    docs = store.events(run.run_id)
    verified = verify_log(load_suite(str(tmp_path / "suite.json")).suite, docs, result.summary)
    assert verified.agrees
    assert not verified.log_problems
    store.close()


def test_a_vanished_sqlite_file_makes_the_store_unavailable_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "s.sqlite"
    store = Store(f"sqlite:///{path}")
    store.create_run(_record("r1"), [_row(0)])
    path.rename(tmp_path / "moved.sqlite")
    with caplog.at_level(logging.ERROR, "openwop_eval.store"):
        for _ in range(3):
            with pytest.raises(StoreUnavailableError):
                store.append("r1", [_row(1)])
            with pytest.raises(StoreUnavailableError):
                store.get_run("r1")
    assert len([r for r in caplog.records if "deleted or replaced" in r.message]) == 1
    assert not path.exists()  # no empty store was made in its place
    store.close()
    (tmp_path / "moved.sqlite").rename(path)  # restored: a new store opens it, all there
    again = Store(f"sqlite:///{path}")
    assert again.last_sequence("r1") == 0
    again.close()


def test_a_failure_that_is_the_operations_own_is_not_retried(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 's.sqlite'}")
    store.create_run(_record("r1"), [_row(0)])
    with pytest.raises(StoreError) as raised:
        store.append("r1", [_row(0)])  # sequence 0 again: the store's keys refuse it
    assert not isinstance(raised.value, StoreUnavailableError)
    store.close()


def test_the_checkpointer_never_makes_an_empty_store_where_one_vanished(tmp_path: Path) -> None:
    checkpointer = WalCheckpointer(str(tmp_path / "gone.sqlite"))
    checkpointer.poke()
    assert checkpointer.wait(1, timeout_s=30)
    checkpointer.close()
    assert checkpointer.failures == 1
    assert not (tmp_path / "gone.sqlite").exists()
