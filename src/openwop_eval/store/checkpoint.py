"""Checkpointing a SQLite store's write-ahead log on a thread of its own.

In WAL mode with ``synchronous=NORMAL`` a commit only appends pages to the log; the cost
is in the checkpoint, which copies them into the database file and syncs both. SQLite
runs it inside the commit that fills the log past ``wal_autocheckpoint`` pages, so the
writer (a run's committer) stalls on it, and the stall grows with the file: a run of
100,000 trials lost a fifth of its speed between its first and last 20,000. Here a
background connection checkpoints (``PASSIVE``: it never waits for, nor blocks, a reader
or the writer) shortly after commits, while the writer goes on; the writer's own
checkpoint, at a higher threshold, stays as the fallback that restarts the log when this
thread falls behind.

Nothing here decides what is durable: a checkpoint that fails or never runs leaves every
commit in the log, which SQLite replays on the next open. So failures are counted, not
raised.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from pathlib import Path

from .fork import GATE

INTERVAL_S = 0.25
"""At most one checkpoint per interval: each syncs the file, and a commit comes every few
milliseconds under load."""
WRITER_FALLBACK_BYTES = 16 << 20
"""The log size at which the writer checkpoints itself (its ``wal_autocheckpoint``, which
SQLite counts in pages of the file's own size): reached only when this thread falls
behind."""


def fallback_pages(page_size: int) -> int:
    """``WRITER_FALLBACK_BYTES`` in pages of ``page_size`` bytes."""
    return max(1, WRITER_FALLBACK_BYTES // page_size)


class WalCheckpointer:
    """Checkpoints the log of the SQLite file at ``path`` after :meth:`poke`, off the
    caller's thread. Started on the first poke in each process (a forked child gets its
    own thread and connection)."""

    def __init__(self, path: str, interval_s: float = INTERVAL_S) -> None:
        self.path = path
        self.interval_s = interval_s
        self.checkpoints = 0
        self.failures = 0
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._done = threading.Condition()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def poke(self) -> None:
        """Note a commit: a checkpoint follows within the interval."""
        if self._pid != os.getpid():
            self._start()
        self._dirty.set()

    def wait(self, count: int, timeout_s: float) -> bool:
        """Whether ``count`` checkpoints have run (or failed) within ``timeout_s``."""
        with self._done:
            return self._done.wait_for(lambda: self.checkpoints + self.failures >= count, timeout_s)

    def close(self) -> None:
        """Stop the thread; a checkpoint under way finishes first."""
        self._stop.set()
        self._dirty.set()
        thread = self._thread
        if thread is not None and self._pid == os.getpid():
            thread.join()
        self._thread = None

    def _start(self) -> None:
        with self._lock:
            if self._pid == os.getpid():
                return
            # Fresh in a forked child: the parent's thread may have held one at the fork.
            self._dirty, self._stop, self._done = (
                threading.Event(),
                threading.Event(),
                threading.Condition(),
            )
            self._thread = threading.Thread(
                target=self._work, name="openwop-eval-checkpoint", daemon=True
            )
            self._pid = os.getpid()
            self._thread.start()

    def _work(self) -> None:
        connection: sqlite3.Connection | None = None
        try:
            while True:
                self._dirty.wait()
                if self._stop.is_set():
                    return
                self._dirty.clear()
                with GATE.shared():  # not inside SQLite while the process forks (fork.py)
                    connection = connection or self._connect()
                    self._checkpoint(connection)
                if self._stop.wait(self.interval_s):
                    return
        finally:
            if connection is not None:
                with GATE.shared():
                    connection.close()

    def _connect(self) -> sqlite3.Connection | None:
        try:
            # Read-write, never create: a file deleted under the store stays gone
            # (store/identity.py), not replaced by an empty one.
            uri = f"{Path(self.path).absolute().as_uri()}?mode=rw"
            return sqlite3.connect(uri, uri=True, timeout=0, check_same_thread=False)
        except sqlite3.Error:
            return None

    def _checkpoint(self, connection: sqlite3.Connection | None) -> None:
        ok = False
        if connection is not None:
            with contextlib.suppress(sqlite3.Error):  # busy or failing: the writer's fallback
                connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                ok = True
        with self._done:
            if ok:
                self.checkpoints += 1
            else:
                self.failures += 1
            self._done.notify_all()
