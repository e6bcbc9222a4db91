"""A SQLite store's write-ahead log is checkpointed by a thread of its own, never at the cost
of a commit: what is committed stays committed whether that thread runs, fails or stops."""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
from pathlib import Path

from openwop_eval.store import EventRow, RunRecord, Store
from openwop_eval.store.checkpoint import WalCheckpointer

WAIT_S = 30.0  # a bound on a wait for the thread, not a timing


def _store(tmp_path: Path) -> Store:
    store = Store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    store.create_run(RunRecord("local/r", "local", "running", "a.b.evals.c", "1.0.0", "x", "a", {}))
    return store


def _rows(start: int, count: int) -> list[EventRow]:
    return [EventRow(i, f"ev-{i}", "x", f'{{"sequence":{i}}}') for i in range(start, start + count)]


def _events_in_file_alone(database: Path, copy: Path) -> int:
    """Events the database file holds without its log (a copy of the file alone)."""
    shutil.copyfile(database, copy)
    connection = sqlite3.connect(copy)
    try:
        return int(connection.execute("SELECT count(*) FROM events").fetchone()[0])
    finally:
        connection.close()


def _threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "openwop-eval-checkpoint"]


def test_committed_events_reach_the_database_file_from_the_background(tmp_path: Path) -> None:
    store = _store(tmp_path)
    checkpointer = store._checkpointer
    assert checkpointer is not None
    store.append("local/r", _rows(0, 500))
    assert checkpointer.wait(1, WAIT_S)
    # The writer's own checkpoint starts at 16 MB of log; these 500 rows are far below it.
    assert _events_in_file_alone(tmp_path / "store.sqlite", tmp_path / "copy.sqlite") == 500
    assert checkpointer.failures == 0
    store.close()


def test_closing_stops_the_thread_and_keeps_every_event(tmp_path: Path) -> None:
    store = _store(tmp_path)
    before = len(_threads())
    store.append("local/r", _rows(0, 10))
    assert len(_threads()) == before + 1
    store.close()
    assert len(_threads()) == before
    reopened = Store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    assert [e["sequence"] for e in reopened.events("local/r")] == list(range(10))
    reopened.close()


def test_a_checkpoint_that_cannot_run_is_counted_not_raised(tmp_path: Path) -> None:
    checkpointer = WalCheckpointer(str(tmp_path / "missing" / "store.sqlite"), interval_s=0)
    checkpointer.poke()
    assert checkpointer.wait(1, WAIT_S)
    assert (checkpointer.checkpoints, checkpointer.failures) == (0, 1)
    checkpointer.poke()  # the thread goes on after a failure
    assert checkpointer.wait(2, WAIT_S)
    checkpointer.close()


def test_a_store_in_memory_or_by_uri_has_no_checkpointer(tmp_path: Path) -> None:
    for url in ("sqlite:///:memory:", f"sqlite:///file:{tmp_path / 'u.sqlite'}?uri=true"):
        store = Store(url)
        assert store._checkpointer is None
        store.close()
    assert not list(Path.cwd().glob("file:*"))  # no stray file named after the URI


def test_a_forked_child_checkpoints_on_its_own_thread(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.append("local/r", _rows(0, 10))
    checkpointer = store._checkpointer
    assert checkpointer is not None
    assert checkpointer.wait(1, WAIT_S)
    pid = os.fork()
    if pid == 0:  # the child: its parent's thread is not here; a commit starts its own
        code = 1
        try:
            store.engine.dispose(close=False)  # the parent's connections stay the parent's
            store.append("local/r", _rows(10, 10))
            code = 0 if checkpointer.wait(checkpointer.checkpoints + 1, WAIT_S) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert [e["sequence"] for e in store.events("local/r")] == list(range(20))
    store.close()


def _pragma(store: Store, name: str) -> int:
    with store.transaction() as tx:
        return int(tx.exec_driver_sql(f"PRAGMA {name}").scalar())


def test_a_new_store_has_16_kb_pages_and_checkpoints_itself_at_16_mb(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert _pragma(store, "page_size") == 16384
    assert _pragma(store, "wal_autocheckpoint") == 1024  # 16 MB of 16 KB pages
    store.close()


def test_a_store_made_with_4_kb_pages_keeps_them_and_every_event(tmp_path: Path) -> None:
    """A store written before pages grew: its page size cannot change in WAL mode, and the
    writer's fallback is counted in its own pages."""
    path = tmp_path / "store.sqlite"
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA page_size=4096")
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("CREATE TABLE early (x)")
    connection.commit()
    connection.close()
    store = _store(tmp_path)
    store.append("local/r", _rows(0, 300))
    assert _pragma(store, "page_size") == 4096
    assert _pragma(store, "wal_autocheckpoint") == 4096  # 16 MB of 4 KB pages
    store.close()
    reopened = Store(f"sqlite:///{path}")
    assert [row.sequence for row in reopened.event_rows("local/r")] == list(range(300))
    reopened.close()
