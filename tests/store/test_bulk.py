"""Rows go to the database in few multi-row statements, every row once, in order."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from openwop_eval.store import EventRow, RunRecord, Store
from openwop_eval.store.bulk import CHUNK, parts


@given(st.integers(0, 2000), st.integers(1, 300))
def test_the_parts_cover_every_row_once_in_order_in_few_shapes(count: int, chunk: int) -> None:
    found = list(parts(count, chunk))
    assert sum(size for _, size in found) == count
    ends = [start + size for start, size in found]
    assert [start for start, _ in found] == [0, *ends][: len(found)]
    assert all(0 < size <= chunk for _, size in found)
    # full chunks, then at most one statement shape per halving: the driver prepares few
    assert len({size for _, size in found}) <= chunk.bit_length() + 1
    rest = [size for _, size in found if size != chunk]
    assert rest == sorted(rest, reverse=True)


def test_a_large_commit_keeps_every_event_and_trial_in_order(database: str) -> None:
    store = Store(database)
    run_id = f"local/bulk-{abs(hash(database))}"
    store.create_run(
        RunRecord(run_id, "local", "running", "a.b.evals.c", "1.0.0", "x", "agent", {"s": 1})
    )
    count = 3 * CHUNK + 77  # full chunks and every power-of-two part below one
    rows = [EventRow(i, f"ev-bulk-{run_id}-{i}", "x", f'{{"i":{i}}}') for i in range(count)]
    trials = [(f"t-{i % 7}", i, f"inv-{i}", {"output": i, "error": None}) for i in range(CHUNK + 5)]
    store.append(run_id, rows, trials)
    stored = store.event_rows(run_id)
    assert stored == rows
    results = store.trial_results(run_id)
    assert len(results) == len(trials)
    assert results[("t-3", 10)] == {"output": 10, "error": None, "invocationId": "inv-10"}
    store.close()


def test_a_sqlite_store_keeps_its_statement_journals_in_memory(tmp_path: Path) -> None:
    """Each multi-row insert keeps a statement journal; on disk, a large commit made a
    temporary file for it (written, then deleted) every time."""
    store = Store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    store.create_run(RunRecord("local/r", "local", "running", "a.b.evals.c", "1.0.0", "x", "a", {}))
    rows = [EventRow(i, f"ev-{i}", "x", "{}" + " " * 500) for i in range(2000)]
    store.append("local/r", rows)
    with store.transaction() as tx:
        assert tx.exec_driver_sql("PRAGMA temp_store").scalar() == 2  # MEMORY
    assert len(store.events("local/r")) == 2000
    store.close()
