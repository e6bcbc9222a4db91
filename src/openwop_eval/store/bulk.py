"""Inserting many rows in few statements: the store's hottest writes.

A run of 100,000 trials inserts 1,000,000 event rows. Sent one row per execution (a
driver's ``executemany``), each row is a statement step of its own, and SQLite's driver lets
go of the interpreter lock around every step: the committing thread then waits to take it
back from the event loop, once per row, which doubled its time per commit under load
(``bench/runner/run_bench.py``). Here rows go in multi-row ``VALUES`` statements of at most
:data:`CHUNK` rows: one step, and one wait, per chunk; the rows themselves are inserted
by the database while the loop runs.

Statement shapes stay few, so each is prepared once and then taken from the driver's
cache: full chunks, and the rest in power-of-two parts (at most ``log2(CHUNK)`` more).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .records import EventRow
from .schema import events, runs

CHUNK = 128
"""Rows per statement at most: 640 parameters for the events' five columns, below SQLite's
oldest limit (999 in builds before 3.32) and PostgreSQL's (65,535)."""


def mark(tx: Connection) -> str:
    """The driver's positional parameter: the hottest statements go to it directly, past
    the expression layer's per-row processing."""
    return "?" if tx.dialect.paramstyle == "qmark" else "%s"


def parts(count: int, chunk: int = CHUNK) -> Iterator[tuple[int, int]]:
    """``(start, size)`` of each statement for ``count`` rows: full chunks, then the rest
    as decreasing powers of two."""
    start = 0
    while count - start >= chunk:
        yield start, chunk
        start += chunk
    size = chunk
    while start < count:
        size = max(1, size // 2)
        if count - start >= size:
            yield start, size
            start += size


def insert_rows(
    tx: Connection, head: str, row: str, rows: Sequence[Sequence[Any]], chunk: int = CHUNK
) -> None:
    """``head`` (``INSERT INTO t (a, b)``) with ``row`` (``(?, ?)``) once per row, in as
    few statements as :func:`parts` makes; all inside the caller's transaction."""
    shapes: dict[int, str] = {}
    for start, size in parts(len(rows), chunk):
        statement = shapes.get(size)
        if statement is None:
            statement = shapes[size] = f"{head} VALUES {','.join([row] * size)}"
        flat = tuple(itertools.chain.from_iterable(rows[start : start + size]))
        tx.exec_driver_sql(statement, flat)


def insert_events(tx: Connection, run_id: str, docs: Sequence[dict[str, Any] | EventRow]) -> None:
    if not docs:
        return
    rows = [(run_id, *(d if isinstance(d, EventRow) else EventRow.of(d))) for d in docs]
    m = mark(tx)
    head = "INSERT INTO events (run_id, sequence, event_id, type, doc)"
    insert_rows(tx, head, f"({m}, {m}, {m}, {m}, {m})", rows)


def run_exists(tx: Connection, run_id: str) -> bool:
    return tx.execute(sa.select(runs.c.run_id).where(runs.c.run_id == run_id)).first() is not None


def landed(tx: Connection, run_id: str, docs: Sequence[dict[str, Any] | EventRow]) -> bool:
    """Whether a batch is in the store already: its first event, by its id (the ids are
    unique to the writer, so another writer's event at that sequence is not this one)."""
    if not docs:
        return False
    first = docs[0] if isinstance(docs[0], EventRow) else EventRow.of(docs[0])
    query = sa.select(events.c.event_id).where(
        (events.c.run_id == run_id) & (events.c.sequence == first.sequence)
    )
    return tx.execute(query).scalar() == first.event_id
