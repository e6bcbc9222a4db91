"""The store on SQLAlchemy Core: the same code on SQLite and PostgreSQL.

Events are append-only; a trial's events and its diagnostics are committed in one
transaction, so a run killed at any moment keeps every finished trial and nothing half-done.
Every operation is retried on transient failures (store/retry.py), and a retried commit
first looks whether its first attempt landed, so a batch is committed exactly once.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import fields, replace
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ..base import jsontext
from ..runtime.clock import utc_stamp
from .bulk import insert_events, insert_rows, landed, mark, run_exists
from .checkpoint import WalCheckpointer
from .deadline import WATCHDOG
from .engine import TRANSACTION_DEADLINE_S, in_memory, make_engine
from .fork import GATE, detach
from .identity import FileIdentity, StoreGoneError
from .records import EventRow, RunRecord, RunStatus
from .retry import RETRY_S, StoreError, StoreUnavailableError, describe, pause, transient
from .schema import events, runs, trial_results
from .status import UNFINISHED, Moved, move
from .within import Within

__all__ = ["Store", "StoreError", "StoreUnavailableError", "Within", "default_url", "in_memory"]
log = logging.getLogger("openwop_eval.store")
T = TypeVar("T")


def default_url() -> str:
    """``$OPENWOP_EVAL_STORE``, else SQLite at ``$XDG_DATA_HOME/openwop-eval/store.sqlite``."""
    configured = os.environ.get("OPENWOP_EVAL_STORE")
    if configured:
        return configured
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return f"sqlite:///{base / 'openwop-eval' / 'store.sqlite'}"


def _decode(text: str) -> Any:
    """Stored JSON: fast and strict, with the standard reader for rows an older version
    wrote (it accepted integers beyond 64 bits)."""
    try:
        return jsontext.loads(text)
    except ValueError:
        return json.loads(text)


_MIGRATING = 0x6F77_6576_616C  # an advisory lock key: one process migrates at a time
PAGE_SIZE = 16384
"""The page size of a new SQLite store, in bytes."""
HEAD = "0007"
"""The newest migration's revision (a test keeps it equal to alembic's head)."""
_CODEC: dict[str, Any] = {"json_serializer": jsontext.dumps, "json_deserializer": _decode}


def schema_revision(engine: Engine) -> str | None:
    """The revision alembic recorded in the database, or None before the first migration."""
    with engine.connect() as connection:
        if not sa.inspect(connection).has_table("alembic_version"):
            return None
        return connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()


def _checkpointer(engine: Engine) -> WalCheckpointer | None:
    """A background checkpointer for a SQLite file (not for memory, nor PostgreSQL, nor a
    ``file:`` URI, whose options a plain path would drop)."""
    path = engine.url.database
    if engine.dialect.name != "sqlite" or in_memory(engine.url) or not path:
        return None
    if engine.url.query.get("uri") or path.startswith("file:"):
        return None
    return WalCheckpointer(path)


class Store:
    """Runs, their events and trial diagnostics, behind one database URL."""

    def __init__(self, url: str | None = None) -> None:
        self.url = url or default_url()
        try:
            self.engine = make_engine(self.url, _CODEC, PAGE_SIZE)
            self._migrate()
        except (sa.exc.SQLAlchemyError, OSError, ImportError) as exc:
            raise StoreError(f"cannot open the store at {self.url}: {exc}") from exc
        self._checkpointer = _checkpointer(self.engine)
        self._identity = FileIdentity.of(self.engine)
        self._guarded = self.engine.dialect.name == "postgresql"
        self.retry_s = RETRY_S

    def _migrate(self) -> None:
        if schema_revision(self.engine) == HEAD:
            return  # up to date: alembic (a quarter of a second to import) is not needed
        from alembic import command
        from alembic.config import Config
        from alembic.util.exc import CommandError

        config = Config()
        config.set_main_option(
            "script_location", str(resources.files("openwop_eval.store") / "migrations")
        )
        with self.engine.begin() as connection:
            if connection.dialect.name == "postgresql":  # replicas starting at once: one migrates
                connection.execute(sa.text("SET LOCAL statement_timeout = 0"))
                connection.execute(sa.text("SET LOCAL lock_timeout = 0"))
                connection.execute(
                    sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATING}
                )
            config.attributes["connection"] = connection
            try:
                command.upgrade(config, "head")
            except CommandError as exc:  # a revision this version does not know (a newer one's)
                raise StoreError(f"cannot migrate the store at {self.url}: {exc}") from exc
        # Alembic's modules, just loaded, would otherwise sit in the collector's young
        # generations, walked by every pass of the run that follows until they age out.
        gc.collect()

    def detach_in_child(self) -> None:
        """In a forked child (:mod:`.fork`): go on with connections of its own."""
        detach(self.engine)

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.close()
        self.engine.dispose()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A transaction on the store; commits on success, rolls back on error. Not
        retried (:meth:`atomic` is): a transient failure raises :class:`StoreUnavailableError`."""
        try:
            if self._identity is not None:
                self._identity.check()
            with GATE.shared(), self.engine.connect() as connection:
                guard = (
                    WATCHDOG.guard(connection.connection.dbapi_connection, TRANSACTION_DEADLINE_S)
                    if self._guarded
                    else contextlib.nullcontext()
                )
                with guard, connection.begin():
                    yield connection
        except sa.exc.SQLAlchemyError as exc:
            if transient(exc):
                raise _unavailable(exc) from exc
            raise StoreError(f"store error: {exc}") from exc

    def atomic(self, work: Callable[[Connection], T]) -> T:
        """``work`` in one transaction, retried on transient failures for at most
        ``retry_s`` seconds (store/retry.py); then :class:`StoreUnavailableError`. ``work`` may
        run more than once, so it must read again what it decides on, and a write whose
        first try may have landed unseen (a commit whose answer was lost) must look first."""
        attempt, deadline = 0, time.monotonic() + self.retry_s
        while True:
            try:
                with self.transaction() as tx:
                    return work(tx)
            except StoreGoneError:
                raise  # until a restart: no retry brings the file back
            except StoreUnavailableError as exc:
                wait = pause(attempt)
                if time.monotonic() + wait > deadline:
                    raise
                why = describe(exc.__cause__ or exc)
                log.warning("the store failed for now, retrying: %s", why)
                time.sleep(wait)
                attempt += 1

    # --- runs ---------------------------------------------------------------------------

    def create_run(
        self,
        run: RunRecord,
        opening: Sequence[dict[str, Any] | EventRow] = (),
        within: Within | None = None,
    ) -> RunRecord:
        """Insert the run and its first events in one transaction (with ``within``'s
        writes: a host replica's lease on the run)."""
        stamp = utc_stamp()
        row = {**_row(run), "created_at": stamp, "updated_at": stamp}
        tries = 0

        def work(tx: Connection) -> None:
            nonlocal tries
            tries += 1
            if tries > 1 and run_exists(tx, run.run_id):  # the first try landed
                return
            tx.execute(runs.insert().values(**row))
            insert_events(tx, run.run_id, opening)
            if within is not None:
                within(tx)

        self.atomic(work)
        # The run as stored; its documents are those just written, not decoded back.
        stored = self.get_run(run.run_id, documents=False)
        if stored is None:  # another process deleted it at once: not ours to paper over
            raise StoreError(f"run {run.run_id} vanished as it was created")
        documents = {name: getattr(run, name) for name in _DOCUMENTS}
        return replace(stored, **documents)

    def get_run(self, run_id: str, documents: bool = True) -> RunRecord | None:
        """The run; with ``documents=False`` its suite, summary and fixture source are not
        read (they grow with the suite, and most readers need only the run's state)."""
        columns = _ALL if documents else _LIGHT
        query = sa.select(*columns).where(runs.c.run_id == run_id)
        row = self.atomic(lambda tx: tx.execute(query).mappings().first())
        return None if row is None else RunRecord(**row)

    def summary(self, run_id: str) -> dict[str, Any] | None:
        query = sa.select(runs.c.summary).where(runs.c.run_id == run_id)
        value = self.atomic(lambda tx: tx.execute(query).scalar())
        return value if isinstance(value, dict) else None

    def list_runs(
        self,
        tenant: str | None = None,
        *,
        status: str | None = None,
        limit: int = 50,
        before: tuple[str, str] | None = None,
        suite: tuple[str, str] | None = None,
        suite_id: str | None = None,
    ) -> list[RunRecord]:
        """Newest first; ``before`` is the (created_at, run_id) of the last row of a page;
        ``suite`` keeps the runs of one (suiteId, version), ``suite_id`` those of any version."""
        query = sa.select(*_LIGHT).order_by(runs.c.created_at.desc(), runs.c.run_id.desc())
        if tenant is not None:
            query = query.where(runs.c.tenant == tenant)
        if suite is not None:
            query = query.where((runs.c.suite_id == suite[0]) & (runs.c.suite_version == suite[1]))
        if suite_id is not None:
            query = query.where(runs.c.suite_id == suite_id)
        if status is not None:
            query = query.where(runs.c.status == status)
        if before is not None:
            stamp, run_id = before
            query = query.where(
                sa.or_(
                    runs.c.created_at < stamp,
                    sa.and_(runs.c.created_at == stamp, runs.c.run_id < run_id),
                )
            )
        page = query.limit(limit)
        rows = self.atomic(lambda tx: tx.execute(page).mappings().all())
        return [RunRecord(**row) for row in rows]

    def unfinished_runs(self) -> list[RunRecord]:
        """Every run, of any tenant, not yet completed, failed or cancelled."""
        query = sa.select(runs).where(runs.c.status.in_(UNFINISHED))
        rows = self.atomic(lambda tx: tx.execute(query).mappings().all())
        return [RunRecord(**row) for row in rows]

    def set_status(
        self,
        run_id: str,
        status: RunStatus,
        *,
        summary: dict[str, Any] | None = None,
        error: str | None = None,
        evidence: str | None = None,
    ) -> Moved:
        """Move the run to ``status`` where :data:`~.status.MOVES` allows it from its
        current one (compare-and-set), with the values given (``evidence``: a host's seal,
        written with the summary it seals); see :class:`~.status.Moved`."""
        given = {"summary": summary, "error": error, "evidence": evidence}
        kept, tries = {k: v for k, v in given.items() if v is not None}, 0

        def work(tx: Connection) -> Moved:
            nonlocal tries
            tries += 1
            return move(tx, run_id, status, {**kept, "updated_at": utc_stamp()}, tries > 1)

        return self.atomic(work)

    # --- events and trials --------------------------------------------------------------

    def append(
        self,
        run_id: str,
        docs: Sequence[dict[str, Any] | EventRow],
        trials: Sequence[tuple[str, int, str, dict[str, Any] | str]] = (),
        within: Within | None = None,
    ) -> None:
        """Append events (documents, or rows already encoded), and the diagnostics of the
        trials they finish (each a JSON object, or its text from :func:`jsontext.dumps`),
        in one transaction; ``within`` runs first in it (a replica's lease check, which
        refuses the commit by raising).

        A trial's diagnostics are written once, with the events that mark it done.
        """
        tries = 0

        def work(tx: Connection) -> None:
            nonlocal tries
            tries += 1
            if tries > 1 and landed(tx, run_id, docs):  # the first try's answer was lost
                return
            if within is not None:
                within(tx)
            insert_events(tx, run_id, docs)
            if trials:
                m = mark(tx)
                json = m if m == "?" else f"CAST({m} AS JSON)"
                insert_rows(
                    tx,
                    "INSERT INTO trial_results (run_id, task_id, trial, invocation_id, data)",
                    f"({m}, {m}, {m}, {m}, {json})",
                    [(run_id, t, i, inv, _text(data)) for t, i, inv, data in trials],
                )

        self.atomic(work)
        if self._checkpointer is not None:
            self._checkpointer.poke()

    def events(
        self, run_id: str, after: int = -1, limit: int | None = None
    ) -> list[dict[str, Any]]:
        return [_decode(row.text) for row in self.event_rows(run_id, after, limit)]

    def event_rows(self, run_id: str, after: int = -1, limit: int | None = None) -> list[EventRow]:
        """Events after sequence ``after`` in order, as stored: their JSON text undecoded
        (an event stream sends it as it is)."""
        query = (
            sa.select(events.c.sequence, events.c.event_id, events.c.type, events.c.doc)
            .where((events.c.run_id == run_id) & (events.c.sequence > after))
            .order_by(events.c.sequence)
        )
        if limit is not None:
            query = query.limit(limit)
        rows = self.atomic(lambda tx: tx.execute(query).all())
        return [EventRow(*row) for row in rows]

    def iter_events(
        self, run_id: str, after: int = -1, page: int = 2000
    ) -> Iterator[dict[str, Any]]:
        """Every event after ``after``, in order, decoded (see :meth:`iter_event_rows`)."""
        return (_decode(row.text) for row in self.iter_event_rows(run_id, after, page))

    def iter_event_rows(self, run_id: str, after: int = -1, page: int = 2000) -> Iterator[EventRow]:
        """Every event after ``after``, in order, a page at a time: memory stays at one page
        however long the run, and no transaction is held between pages."""
        while True:
            rows = self.event_rows(run_id, after, page)
            yield from rows
            if len(rows) < page:
                return
            after = rows[-1].sequence

    def last_sequence(self, run_id: str) -> int:
        query = sa.select(sa.func.max(events.c.sequence)).where(events.c.run_id == run_id)
        value = self.atomic(lambda tx: tx.execute(query).scalar())
        return -1 if value is None else int(value)

    def trial_results(self, run_id: str) -> dict[tuple[str, int], dict[str, Any]]:
        query = sa.select(trial_results).where(trial_results.c.run_id == run_id)
        rows = self.atomic(lambda tx: tx.execute(query).mappings().all())
        return {
            (r["task_id"], r["trial"]): {**r["data"], "invocationId": r["invocation_id"]}
            for r in rows
        }


def _unavailable(exc: BaseException) -> StoreUnavailableError:
    """The content-free error of a store that is away (the cause, kept for the log, may
    quote a statement's parameters)."""
    return StoreUnavailableError(f"the store is unavailable for now ({type(exc).__name__})")


def _text(data: dict[str, Any] | str) -> str:
    return data if isinstance(data, str) else jsontext.dumps(data)


_ALL = tuple(runs.c)
_DOCUMENTS = ("suite_doc", "summary", "fixture_source")
_LIGHT = tuple(c for c in runs.c if c.name not in _DOCUMENTS)


def _row(run: RunRecord) -> dict[str, Any]:
    """The run's columns; the store stamps ``created_at`` and ``updated_at`` itself."""
    # Shallow: ``asdict`` would deep-copy the suite document, which the insert only encodes.
    return {
        f.name: getattr(run, f.name)
        for f in fields(run)
        if f.name not in ("created_at", "updated_at")
    }
