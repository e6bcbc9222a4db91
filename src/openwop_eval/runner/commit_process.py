"""The committer's store work in a forked process, on the other core.

Theory of operation. The committer thread (committer.py) grades each finished trial, builds
and encodes its events and commits them. In one interpreter that work and the event loop
take turns on the interpreter lock, so a run of fast agents is bound by one core: the
committer's share is about two thirds of a run's time. A :class:`ProcessCommitter` forks
the process when the run's committer starts and splits that work. The parent's committer
thread grades each batch and builds its events and diagnostics, as the thread does, and
sends them over a pipe, their payloads and the diagnostics encoded as JSON text (:func:`_wire`);
the child numbers the events, composes each one's text around its payload's and commits
them with the diagnostics, and answers for each batch in order; a receiver thread
then folds the committed batch's grades into the run's totals and hands its outcomes to the
loop, as the committer thread does. (When the child graded too, it was the busier of the
two and the parent waited on it a third of the time.) The child has the parent's memory as
it was at the fork (the run's event writer) and connections of its own to the same store
(store/fork.py).

A crash does what it does to the thread: the child commits each batch in one transaction,
so a run killed at any moment keeps exactly its committed trials, and the child is killed
with its parent (lifeline.py). A batch the store refuses ends the run as failed, as on the
thread. A child that dies (killed, out of memory) is a crash of the run's committing half:
:class:`CommitProcessError` is raised and the run stays open, what it committed kept, for
``openwop-eval run --resume`` to run the rest. The child says, when it closes, the last
sequence number it wrote (else the store says it), and the parent writes the run's
closing events after it.

Where (:func:`fork_allowed`): only where nothing else could be inside the fork. A run with
no host around it (no commit hook, no lease) and no executor, on Linux, whose store is a
file or a server (not SQLite in memory) and whose event file, if any, is a real file; not
beside another such run in the process. ``OPENWOP_EVAL_COMMITTER`` chooses: ``auto`` (the
default) forks for runs of at least ``MIN_TRIALS`` trials, ``process`` for any run, and
``thread`` never. Both processes pay for the fork as their pages are first written (copy on
write, some tens of milliseconds for a runner's working set), and every trial is pickled
across, so it gains only on long runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import pickle
import signal
import sys
import threading
import warnings
from collections import deque
from collections.abc import Callable
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import IO, Any, NoReturn

from ..base.jsontext import dumps
from ..core import GradingPlan, TrialGrade
from ..runtime.lifeline import die_with
from ..store import Store, StoreError
from ..store.fork import GATE
from ..store.sql import in_memory
from .committer import Committer, Delivered
from .events import EventWriter
from .trial import GradedTrial, PlayedTrial, finish_trial

MIN_TRIALS = 5000
"""``auto``: fewer trials to run than this, and the fork's cost (its copied pages, some
60 ms) may be more than the second core saves (about 50 µs a trial on the benchmark)."""
FORK_WAIT_S = 1.0
"""How long the fork waits for other store work in the process to end (store/fork.py)."""
READY_S = 10.0
"""How long the child may take to come up and reach the store before the thread is used."""
SETTING = "OPENWOP_EVAL_COMMITTER"
CHILD = False
"""True in a commit process."""
_running = 0
"""Runs with a commit process in this process: a second one forks no more (lock = _GUARD)."""
_GUARD = threading.Lock()
Wire = tuple[Any, ...]


class CommitProcessError(RuntimeError):
    """The commit process stopped before the run was done with it."""


def committer_for(
    writer: EventWriter,
    plan: GradingPlan,
    fold: Callable[[TrialGrade], None],
    delivered: Delivered,
    *,
    store: Store,
    jsonl: IO[str] | None,
    hosted: bool,
    to_run: int,
    waiting: int | None = None,
) -> Committer:
    """A commit process where one can be forked safely now, else the committer thread:
    the same work, the same commits. ``hosted``: the run has a host or an executor around
    it (a commit hook, a lease, Ray). ``waiting``: at most that many trials handed over and
    not yet committed — on the thread, so that a run that stops once decided (fail-fast)
    learns each verdict before it starts many more trials."""
    if waiting is not None:
        return Committer(writer, plan, fold, delivered, max_waiting=waiting)
    if fork_allowed(store, jsonl, hosted, to_run):
        forked = ProcessCommitter.start(writer, plan, fold, delivered, store, jsonl)
        if forked is not None:
            return forked
    return Committer(writer, plan, fold, delivered)


def fork_allowed(
    store: Store, jsonl: IO[str] | None, hosted: bool, to_run: int, setting: str | None = None
) -> bool:
    """Whether a run may commit in a forked process (see the module's docstring)."""
    choice = setting if setting is not None else os.environ.get(SETTING, "auto")
    if choice not in ("thread", "process", "auto"):
        why = f"{SETTING}={choice!r} is not thread, process or auto: the thread commits"
        warnings.warn(why, stacklevel=2)
        return False
    if choice == "thread" or hosted or not sys.platform.startswith("linux"):
        return False
    if in_memory(store.url) or (jsonl is not None and not _real_file(jsonl)):
        return False
    return choice == "process" or to_run >= MIN_TRIALS


def _real_file(handle: IO[str]) -> bool:
    try:
        handle.fileno()
    except (AttributeError, OSError, io.UnsupportedOperation):
        return False
    return True


class ProcessCommitter(Committer):
    """A :class:`Committer` that grades here and commits in a forked child. Built by
    :meth:`start`, which returns None where the fork cannot be made safely now."""

    @classmethod
    def start(
        cls,
        writer: EventWriter,
        plan: GradingPlan,
        fold: Callable[[TrialGrade], None],
        delivered: Delivered,
        store: Store,
        jsonl: IO[str] | None,
    ) -> ProcessCommitter | None:
        global _running
        with _GUARD:
            if _running:
                return None
            _running += 1
        if jsonl is not None:
            jsonl.flush()  # the child writes to the same file after the parent's lines
        ours, theirs = Pipe()
        parent, pid = os.getpid(), -1
        with GATE.alone(FORK_WAIT_S) as alone:
            if alone:
                with contextlib.suppress(OSError), warnings.catch_warnings():
                    # Python 3.12 warns of any fork beside threads: this one is made with
                    # the store's other users held back, and the child touches nothing else.
                    warnings.filterwarnings("ignore", ".*fork", DeprecationWarning)
                    pid = os.fork()
        if pid == 0:
            ours.close()
            _child(theirs, parent, store, writer)
        theirs.close()
        if pid > 0 and not _ready(ours, pid):
            pid = -1
        if pid < 0:
            ours.close()
            _release()
            return None
        return cls(writer, plan, fold, delivered, store, ours, pid)

    def __init__(
        self,
        writer: EventWriter,
        plan: GradingPlan,
        fold: Callable[[TrialGrade], None],
        delivered: Delivered,
        store: Store,
        conn: Connection,
        pid: int,
    ) -> None:
        self._store, self._conn, self._pid = store, conn, pid
        self._lock = threading.Lock()
        self._unanswered: deque[list[GradedTrial]] = deque()  # batches sent, in order
        self._gone: BaseException | None = None
        self._last: int | None = None  # the child's last sequence number, when it closed
        self._ended = False
        super().__init__(writer, plan, fold, delivered)
        self._receiver = threading.Thread(
            target=self._receive, name="openwop-eval-commit-inbox", daemon=True
        )
        self._receiver.start()

    # --- the committer thread: grade, then send ----------------------------------------

    def _commit(self, batch: list[PlayedTrial]) -> None:
        with self._lock:
            gone = self._gone
        if gone is not None:
            self._post([], len(batch), gone)
            return
        try:
            outcomes = [finish_trial(self._plan, done) for done in batch]
            data = pickle.dumps(("batch", [_wire(o) for o in outcomes]), pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # a trial that cannot be graded or sent: the run ends on it
            with self._lock:
                self._gone = self._gone or exc
            self._post([], len(batch), exc)
            return
        with self._lock:  # before sending: the answer may come at once
            self._unanswered.append(outcomes)
        with contextlib.suppress(OSError):  # the child is gone: the receiver answers for it
            self._conn.send_bytes(data)

    # --- the receiver thread ------------------------------------------------------------

    def _receive(self) -> None:
        while (message := _receive(self._conn)) is not None:
            if message[0] == "closed":
                self._last = message[1]
                continue
            failure = message[1]
            with self._lock:
                outcomes = self._unanswered.popleft()
            if failure is None:
                try:
                    for outcome in outcomes:
                        self._fold(outcome.grade)
                except Exception as exc:  # as on the committer thread: the run ends on it
                    failure = exc
            if failure is not None:
                with self._lock:
                    self._gone = self._gone or failure
            self._post(outcomes if failure is None else [], len(outcomes), failure)
        with self._lock:  # the child has exited (closed, or died)
            left = sum(len(outcomes) for outcomes in self._unanswered)
            self._unanswered.clear()
            if self._last is None:
                self._gone = self._gone or CommitProcessError(
                    f"the commit process of run {self._writer.run_id} stopped; what it"
                    " committed is kept and the run stays open: openwop-eval run --resume"
                    f" {self._writer.run_id}"
                )
            failure = self._gone if self._last is None else None
        if left or failure is not None:
            self._post([], left, failure)

    # --- closing --------------------------------------------------------------------------

    async def close(self) -> None:
        self._submit()
        with self._wake:
            self._closed = True
            self._wake.notify()
        await asyncio.to_thread(self._end)
        self._raise_failure()

    def _end(self) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
        self._thread.join()  # every batch has been sent
        with contextlib.suppress(OSError):
            _send(self._conn, ("close",))
        self._receiver.join()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self._pid, 0)
        self._conn.close()
        _release()
        last = self._last
        if last is None:  # it died: the store knows what it committed
            with contextlib.suppress(Exception):
                last = self._store.last_sequence(self._writer.run_id)
        if last is not None:
            self._writer.resync(last)


def _ready(conn: Connection, pid: int) -> bool:
    """Whether the child came up and reached the store; else it is killed (the thread
    does the work instead)."""
    with contextlib.suppress(OSError, EOFError):
        if conn.poll(READY_S) and conn.recv() == ("ready",):
            return True
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    return False


def _release() -> None:
    global _running
    with _GUARD:
        _running -= 1


# --- the child ---------------------------------------------------------------------------


def _child(conn: Connection, parent: int, store: Store, writer: EventWriter) -> NoReturn:
    global CHILD
    CHILD, code = True, 1
    try:
        die_with(parent)
        signal.set_wakeup_fd(-1)  # the parent's loop's: a signal here must not wake it
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's ^C: the parent closes us
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        store.detach_in_child()
        store.last_sequence(writer.run_id)  # the store answers here: the parent may go on
        _send(conn, ("ready",))
        _serve(conn, writer)
        code = 0
    finally:
        os._exit(code)  # no interpreter teardown: it would close what the parent still uses


def _wire(outcome: GradedTrial) -> Wire:
    """What the child commits of a graded trial: its events' payloads and its diagnostics
    as JSON text, in plain tuples. Pickling the objects themselves cost more than encoding
    them, and the child would encode them anyway."""
    record = outcome.record
    events = [(e.type, dumps(e.payload), e.timestamp) for e in outcome.events]
    diagnostics = dumps(outcome.diagnostics)
    return (record.task_id, record.index, outcome.invocation_id, diagnostics, events)


def _serve(conn: Connection, writer: EventWriter) -> None:
    """Number, encode and commit each batch as one transaction, answering for each in
    order: None when it is committed, else why not."""
    broken: BaseException | None = None  # the store failed: nothing more is committed
    while (message := _receive(conn)) is not None:
        if message[0] == "close":
            _send(conn, ("closed", writer.last))
            return
        if broken is None:
            try:
                for task_id, index, invocation_id, diagnostics, events in message[1]:
                    writer.write_encoded(events, (task_id, index, invocation_id, diagnostics))
                writer.flush()
            except BaseException as exc:  # the run ends on it; the parent raises it
                writer.discard()
                broken = exc
                _send(conn, ("done", _portable(exc)))
                continue
            _send(conn, ("done", None))
        else:
            _send(conn, ("done", CommitProcessError("an earlier batch was not committed")))


def _portable(exc: BaseException) -> BaseException:
    """The failure as the parent can receive it: itself, else its kind (never its text,
    which a database error fills with the parameters it was given)."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        kind = StoreError if isinstance(exc, StoreError) else CommitProcessError
        return kind(f"{type(exc).__name__} in the commit process")
    return exc


# --- messages ------------------------------------------------------------------------


def _send(conn: Connection, message: Any) -> None:
    conn.send(message)


def _receive(conn: Connection) -> Any:
    """The next message; None at the end of the stream (the other side closed or died),
    or at a message that does not unpickle: either side then stops as if the other had."""
    try:
        return conn.recv()
    except Exception:
        return None
