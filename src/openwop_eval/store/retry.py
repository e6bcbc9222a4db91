"""Which store failures are transient, and how long an operation retries them.

Transient: the database is briefly away or asked us to try again — PostgreSQL serialization
failures and deadlocks (SQLSTATE 40001, 40P01), a lock or statement timeout (55P03, 57014),
a connection lost or refused (class 08, 57P01–57P03, a connection SQLAlchemy invalidated),
no pooled connection free within the pool's timeout,
the server out of resources (class 53); SQLite busy or locked, its disk full, read-only or
failing (``SQLITE_FULL``, ``SQLITE_READONLY``, ``SQLITE_IOERR``, ``SQLITE_CANTOPEN``), and a
store file that vanished (store/identity.py). An operation retries these with a doubling
pause (``FIRST_PAUSE_S`` up to ``MAX_PAUSE_S``) for at most ``RETRY_S`` in all, then raises
:class:`StoreUnavailableError`: the caller answers ``503 store_unavailable`` or, for a run, leaves
it open to be resumed. Anything else (a constraint, a value the database cannot hold) is the
operation's own fault: :class:`StoreError` at once, never retried.
"""

from __future__ import annotations

from typing import Final

import sqlalchemy as sa

from ..core import OpenwopEvalError

RETRY_S: Final = 5.0
"""The most an operation spends retrying transient failures before it gives up."""
FIRST_PAUSE_S: Final = 0.05
MAX_PAUSE_S: Final = 1.0

_PG_STATES: Final = frozenset({"40001", "40P01", "55P03", "57014", "57P01", "57P02", "57P03"})
_PG_CLASSES: Final = ("08", "53")
_SQLITE_NAMES: Final = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_FULL", "SQLITE_READONLY",
                        "SQLITE_IOERR", "SQLITE_CANTOPEN")  # fmt: skip
_SQLITE_TEXTS: Final = ("locked", "busy", "disk is full", "readonly", "disk i/o", "unable to open")


class StoreError(OpenwopEvalError):
    """The store cannot be opened or written."""


class StoreUnavailableError(StoreError):
    """The store is away for now (unreachable, stalled, its disk full or its file gone):
    nothing of the operation was kept, and it may succeed later."""


def transient(exc: BaseException) -> bool:
    """Whether ``exc`` (an error SQLAlchemy raised) may pass if the operation is tried again."""
    if isinstance(exc, StoreUnavailableError | sa.exc.TimeoutError | sa.exc.DisconnectionError):
        return True  # away, no pooled connection free in time, or one found broken
    if isinstance(exc, sa.exc.DBAPIError) and exc.connection_invalidated:
        return True
    if not isinstance(exc, sa.exc.OperationalError | sa.exc.InternalError | sa.exc.DBAPIError):
        return False
    orig = exc.orig
    state = getattr(orig, "sqlstate", None)
    if isinstance(state, str):
        return state in _PG_STATES or state.startswith(_PG_CLASSES)
    name = getattr(orig, "sqlite_errorname", None)
    if isinstance(name, str):
        return name.startswith(_SQLITE_NAMES)
    if not isinstance(exc, sa.exc.OperationalError):
        return False
    if type(orig).__module__.startswith("psycopg"):  # no state: the connection broke
        return True
    text = str(orig).lower()
    return any(part in text for part in _SQLITE_TEXTS)


def describe(exc: BaseException) -> str:
    """A failure for the log: the driver's error and the first line of its message, never
    the statement or its parameters (tool arguments, outputs)."""
    orig = exc.orig if isinstance(exc, sa.exc.DBAPIError) else exc
    first = str(orig).strip().splitlines()[0] if str(orig).strip() else ""
    return f"{type(orig).__name__}: {first[:200]}"


def pause(attempt: int) -> float:
    """The wait before retry ``attempt`` (0 first): doubling, capped."""
    return float(min(MAX_PAUSE_S, FIRST_PAUSE_S * 2 ** min(attempt, 16)))
