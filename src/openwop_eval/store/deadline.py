"""A deadline on every PostgreSQL transaction, enforced on this side of the connection.

``statement_timeout`` is the server's: a server that is stalled (a frozen process, a
network path that stopped forwarding) never reads the statement, let alone cancels it, and
the TCP stack keeps acknowledging, so the client would wait for ever — and every request
with it. So each transaction registers its connection here with a deadline; one watchdog
thread shuts the socket of a connection still inside its transaction past the deadline.
The driver then fails at once with a broken connection, which the store treats as any
other transient failure (retried within its bound, then ``503 store_unavailable``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

log = logging.getLogger("openwop_eval.store")


class Watchdog:
    def __init__(self) -> None:
        self._reset()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._lock = threading.Condition()
        self._watched: dict[int, tuple[float, Any]] = {}
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def guard(self, dbapi_connection: Any, seconds: float) -> Iterator[None]:
        """Shut ``dbapi_connection``'s socket if the block has not ended in ``seconds``."""
        key = id(dbapi_connection)
        with self._lock:
            self._watched[key] = (time.monotonic() + seconds, dbapi_connection)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watch, name="openwop-eval-store-deadline", daemon=True
                )
                self._thread.start()
            self._lock.notify()
        try:
            yield
        finally:
            with self._lock:
                self._watched.pop(key, None)

    def _watch(self) -> None:
        while True:
            with self._lock:
                now = time.monotonic()
                late = [(k, c) for k, (at, c) in self._watched.items() if at <= now]
                for key, connection in late:
                    del self._watched[key]
                    _shut(connection)
                soonest = min((at for at, _ in self._watched.values()), default=now + 60)
                self._lock.wait(max(0.01, soonest - now))


def _shut(connection: Any) -> None:
    """Break the connection from outside its thread: its blocked read returns at once."""
    with contextlib.suppress(Exception):  # closed meanwhile: nothing to break
        fd = connection.pgconn.socket
        with socket.socket(fileno=os.dup(fd)) as sock:
            sock.shutdown(socket.SHUT_RDWR)
        log.warning("a store transaction passed its deadline: its connection was broken")


WATCHDOG = Watchdog()
