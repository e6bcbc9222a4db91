"""Opening a store's database: SQLite's pragmas, and PostgreSQL's bounds on a stall.

A PostgreSQL connection is opened within ``CONNECT_TIMEOUT_S``; each session runs with a
``statement_timeout`` and a ``lock_timeout``; the pool hands out a connection within
``POOL_TIMEOUT_S``; TCP keepalives and a user timeout notice a dead peer; and every
transaction has a deadline this side enforces (store/deadline.py). Each of these ends in a
transient failure, retried and then answered ``503 store_unavailable`` (store/retry.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from .checkpoint import fallback_pages


def in_memory(url: str | sa.engine.URL) -> bool:
    """A SQLite database in this process's memory: no other process can open it."""
    parsed = sa.engine.make_url(url)
    return parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:")


SQLITE_BUSY_S = 10.0
"""SQLite: how long a writer waits for another writer's lock (``busy_timeout``)."""


def make_engine(url: str, codec: dict[str, Any], page_size: int) -> Engine:
    """The engine of a store URL: SQLite with its pragmas, or PostgreSQL with its bounds."""
    if url.startswith("sqlite"):
        path = sa.engine.make_url(url).database
        if not in_memory(url) and path and not path.startswith("file:"):  # a URI: as given
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        # A writer waits this long for another's lock; then it is a transient failure.
        engine = sa.create_engine(url, connect_args={"timeout": SQLITE_BUSY_S}, **codec)

        @sa.event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            # A new file gets 16 KB pages (a file that exists keeps its own): a commit of a
            # batch of events then syncs a quarter of the pages, and cost a fifth of the time
            # it did on 4 KB pages. In WAL mode the size can no longer change.
            cursor.execute(f"PRAGMA page_size={page_size}")
            cursor.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
            cursor.execute("PRAGMA synchronous=NORMAL")  # durable at each commit in WAL mode
            cursor.execute("PRAGMA foreign_keys=ON")
            # A multi-row insert in a transaction keeps a statement journal (to undo just that
            # statement). Past 64 KB it went to a new temporary file each commit: 3.2 KB of
            # writes and 1.5 system calls per trial. In memory it holds one statement's pages.
            cursor.execute("PRAGMA temp_store=MEMORY")
            # The log is checkpointed off the writer (store/checkpoint.py); this is its fallback.
            actual = cursor.execute("PRAGMA page_size").fetchone()[0]
            cursor.execute(f"PRAGMA wal_autocheckpoint={fallback_pages(actual)}")
            cursor.close()

        return engine
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    # No pre-ping: it would wait unguarded on a stalled server; a connection found broken
    # fails its transaction, which is retried on a new one (retry.py), and SQLAlchemy then
    # drops the pool's other connections of that age.
    return sa.create_engine(
        url,
        pool_timeout=POOL_TIMEOUT_S,
        connect_args=_pg_connect_args(),
        **codec,
    )


CONNECT_TIMEOUT_S = 3
"""PostgreSQL: how long opening a connection may take."""
TRANSACTION_DEADLINE_S = 8.0
"""PostgreSQL: the longest a transaction may take before this side breaks its connection
(store/deadline.py): a stalled server fails requests in seconds instead of hanging them."""
STATEMENT_TIMEOUT_MS = 5_000
"""PostgreSQL: the longest a statement may run (the server cancels it: a transient failure)."""
LOCK_TIMEOUT_MS = 5_000
"""PostgreSQL: the longest a statement may wait for a row or table lock."""
POOL_TIMEOUT_S = 5.0
"""How long an operation waits for a free connection of the pool."""


def _pg_connect_args() -> dict[str, Any]:
    """Bounds on a stalled server: a connect timeout, per-session statement and lock
    timeouts, and TCP keepalives and a user timeout, so a dead peer is noticed in seconds."""
    options = f"-c statement_timeout={STATEMENT_TIMEOUT_MS} -c lock_timeout={LOCK_TIMEOUT_MS}"
    return {
        "connect_timeout": CONNECT_TIMEOUT_S,
        "options": options,
        "keepalives": 1,
        "keepalives_idle": 5,
        "keepalives_interval": 2,
        "keepalives_count": 3,
        "tcp_user_timeout": 10_000,
    }
