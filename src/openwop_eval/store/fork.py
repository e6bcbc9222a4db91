"""Forking a process that uses a store: no thread may be inside the database driver then.

A forked child has only the thread that forked; a lock another thread held at that moment
(SQLite's own mutexes, a connection pool's) stays held in the child for ever. So every use
of a store (its transactions, the WAL checkpointer) passes the process's :data:`GATE`
together with the others, and a fork passes it alone: it waits until no store work is under
way and holds new work back for the instant of the fork. The child then detaches from the
connections it inherited (:func:`detach`), which stay the parent's.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class ForkGate:
    def __init__(self) -> None:
        self._reset()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        # In a child only the forking thread lives: what the others held is gone with them.
        self._changed = threading.Condition()
        self._inside = 0
        self._forking = False

    @contextmanager
    def shared(self) -> Iterator[None]:
        """Store work: any number at once, none while a fork is under way."""
        with self._changed:
            while self._forking:
                self._changed.wait()
            self._inside += 1
        try:
            yield
        finally:
            with self._changed:
                self._inside -= 1
                if not self._inside:
                    self._changed.notify_all()

    @contextmanager
    def alone(self, timeout_s: float) -> Iterator[bool]:
        """Hold store work back while the block runs; yields False (holding nothing back)
        when other store work has not ended within ``timeout_s``, or another fork is
        under way."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            if self._forking:
                got = False
            else:
                self._forking = True
                got = self._changed.wait_for(
                    lambda: not self._inside, max(0.0, deadline - time.monotonic())
                )
                if not got:
                    self._forking = False
                    self._changed.notify_all()
        try:
            yield got
        finally:
            if got:
                with self._changed:
                    self._forking = False
                    self._changed.notify_all()


GATE = ForkGate()

_INHERITED: list[Any] = []
"""The connection pools a child inherited: kept referenced so that they are never closed
(closing a PostgreSQL connection says goodbye on the parent's socket; closing a SQLite one
may checkpoint the parent's log). The child leaves by ``os._exit``."""


def detach(engine: Any) -> None:
    """In a forked child: new connections for ``engine`` (a SQLAlchemy engine), the
    inherited ones left untouched."""
    _INHERITED.append(engine.pool)
    engine.dispose(close=False)
