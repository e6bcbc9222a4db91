"""The committer's work in a forked process, on the other core.

Theory of operation. The committer thread (committer.py) grades each finished trial, builds
and encodes its events and commits them. In one interpreter that work and the event loop
take turns on the interpreter lock, so a run of fast agents is bound by one core: the
committer's share is about two thirds of a run's time. A :class:`ProcessCommitter` forks
the process when the run's committer starts and leaves that work to the child. The
parent's committer thread only sends each batch of trials over a pipe, as plain data
(:mod:`.trial_wire`); a receiver thread folds what the child committed into the run's
totals and hands it to the loop, as the committer thread does. The child has the parent's
memory as it was at the fork (the suite, its compiled plan, the run's event writer) and
connections of its own to the same store (store/fork.py).

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
beside another such run in the process. It is opt-in: ``OPENWOP_EVAL_COMMITTER=process``
forks wherever that holds, ``auto`` only for runs of at least ``MIN_TRIALS`` trials, and
``thread`` (the default) never. Both processes pay for the fork as their pages are first
written (copy on write, some tens of milliseconds for a runner's working set), and every
trial is pickled across, so today it gains only on long runs.
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
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import IO, Any, Literal, NoReturn

from ..agents.base import AgentProtocolError, AgentReply
from ..core import GradingPlan, TrialGrade
from ..core.safety import SafetyPolicy
from ..lifeline import die_with
from ..store import Store, StoreError
from ..store.fork import GATE
from ..store.sql import in_memory
from .committer import Committer, Delivered, commit_batch
from .events import EventWriter
from .trial import Finished
from .trial_wire import finished_in, finished_out, outcome_in, outcome_out

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
    agent_id: str,
    safety: SafetyPolicy | None,
    observed: bool,
    detail: bool,
) -> Committer:
    """A commit process where one can be forked safely now, else the committer thread:
    the same work, the same commits. ``hosted``: the run has a host or an executor around
    it (a commit hook, a lease, Ray)."""
    if fork_allowed(store, jsonl, hosted, to_run):
        forked = ProcessCommitter.start(
            writer, plan, fold, delivered, store, agent_id, safety, jsonl, _sent(observed, detail)
        )
        if forked is not None:
            return forked
    return Committer(writer, plan, fold, delivered)


Outcomes = Literal["none", "slim", "full"]
"""What the child sends back of each trial besides its grade: nothing (no observer), the
outcome without its events and diagnostics, or all of it."""


def _sent(observed: bool, detail: bool) -> Outcomes:
    return "none" if not observed else "full" if detail else "slim"


def fork_allowed(
    store: Store, jsonl: IO[str] | None, hosted: bool, to_run: int, setting: str | None = None
) -> bool:
    """Whether a run may commit in a forked process (see the module's docstring)."""
    choice = setting if setting is not None else os.environ.get(SETTING, "thread")
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


@dataclass
class _Named:
    """The run's agent as the child knows it, by id: it plays no trial."""

    agent_id: str

    async def run(self, context: Any, port: Any) -> AgentReply:
        raise AgentProtocolError("a commit process plays no trial")


class ProcessCommitter(Committer):
    """A :class:`Committer` whose grading and commits run in a forked child. Built by
    :meth:`start`, which returns None where the fork cannot be made safely now."""

    @classmethod
    def start(
        cls,
        writer: EventWriter,
        plan: GradingPlan,
        fold: Callable[[TrialGrade], None],
        delivered: Delivered,
        store: Store,
        agent_id: str,
        safety: SafetyPolicy | None,
        jsonl: IO[str] | None,
        outcomes: Outcomes,
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
                with contextlib.suppress(OSError):
                    pid = os.fork()
        if pid == 0:
            ours.close()
            _child(theirs, parent, store, writer, plan, _Named(agent_id), safety, outcomes)
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
        self._positions = {task.task_id: i for i, task in enumerate(plan.tasks)}
        self._lock = threading.Lock()
        self._sent = 0  # trials sent that the child has not answered for
        self._gone: BaseException | None = None
        self._last: int | None = None  # the child's last sequence number, when it closed
        self._ended = False
        super().__init__(writer, plan, fold, delivered)
        self._receiver = threading.Thread(
            target=self._receive, name="openwop-eval-commit-inbox", daemon=True
        )
        self._receiver.start()

    # --- the committer thread: send ---------------------------------------------------

    def _commit(self, batch: list[Finished]) -> None:
        with self._lock:
            gone = self._gone
            if gone is None:
                self._sent += len(batch)
        if gone is not None:
            self._post([], len(batch), gone)
            return
        try:
            items = [finished_out(self._positions[d.setup.task.task_id], d) for d in batch]
            _send(self._conn, ("batch", items))
        except OSError:
            pass  # the child is gone: the receiver answers for what was sent
        except Exception as exc:  # a trial that cannot be pickled: the run ends on it
            with self._lock:
                self._gone, self._sent = self._gone or exc, self._sent - len(batch)
            self._post([], len(batch), exc)

    # --- the receiver thread ------------------------------------------------------------

    def _receive(self) -> None:
        while (message := _receive(self._conn)) is not None:
            if message[0] == "closed":
                self._last = message[1]
                continue
            _, count, grades, told, failure = message
            try:
                for grade in grades:
                    self._fold(grade)
                outcomes = [outcome_in(wire) for wire in told]
            except Exception as exc:  # as on the committer thread: the run ends on it
                failure, outcomes = failure or exc, []
            with self._lock:
                self._sent -= count
                if failure is not None:
                    self._gone = self._gone or failure
            self._post(outcomes, count, failure)
        with self._lock:  # the child has exited (closed, or died)
            left, self._sent = self._sent, 0
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


def _child(
    conn: Connection,
    parent: int,
    store: Store,
    writer: EventWriter,
    plan: GradingPlan,
    agent: _Named,
    safety: SafetyPolicy | None,
    outcomes: Outcomes,
) -> NoReturn:
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
        _serve(conn, writer, plan, agent, safety, outcomes)
        code = 0
    finally:
        os._exit(code)  # no interpreter teardown: it would close what the parent still uses


def _serve(
    conn: Connection,
    writer: EventWriter,
    plan: GradingPlan,
    agent: _Named,
    safety: SafetyPolicy | None,
    outcomes: Outcomes,
) -> None:
    broken = False  # the store failed: nothing more is committed
    while (message := _receive(conn)) is not None:
        if message[0] == "close":
            _send(conn, ("closed", writer.last))
            return
        items = message[1]
        if broken:
            _send(conn, ("done", len(items), [], [], None))
            continue
        batch = [finished_in(item, plan.tasks, agent, safety) for item in items]
        try:
            done = commit_batch(plan, writer, batch)
        except BaseException as exc:  # the run ends on it; the parent raises it
            broken = True
            _send(conn, ("done", len(items), [], [], _portable(exc)))
            continue
        told = [] if outcomes == "none" else [outcome_out(o, outcomes == "full") for o in done]
        _send(conn, ("done", len(items), [o.grade for o in done], told, None))


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
