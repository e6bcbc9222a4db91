"""A run worker: a process beside the host's HTTP process that plays the host's runs.

:func:`main` (``FD PID``) is started by the host (workers.py), never by hand. Over the
connection on file descriptor ``FD`` it first receives the host's configuration, its
store's URL, its lease and its ``sys.path``; it loads the same catalog, says ``ready``, and
then plays each run it is handed — created by the host, resumed here through the runner's
one resume path, so only its missing trials run — until the host cancels or stops it.
Every commit of a run the host's streams follow goes back to the host already formatted as
Server-Sent Events frames, then the commit's wake-up: the host's streams fan out what the
worker wrote without reading it back, and the run does not share an interpreter lock with
them. The host stops its runs here before it closes the connection; a worker whose host
died dies with it, with no write after, and the host's next start resumes the runs.

A watchdog (watchdog.py) sees an agent block this worker's event loop for ``agent_stall_s``:
it tells the host which run's agent did, and the worker exits at once — the only way to
take the loop back from code that does not yield. The host ends that run ``agent_stalled``
and resumes the others in a new worker, from what they committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from functools import partial
from multiprocessing.connection import Connection
from typing import Any

from ..log.versions import LogVersionError
from ..runner import ActiveRun, RunEndedError, RunError, RunService, trial
from ..runner.ending import AGENT_GONE
from ..runtime import gc_tuning
from ..runtime.lifeline import die_with
from ..runtime.loops import run_fast
from ..store import EventRow, Store, StoreUnavailableError
from ..store.host import HostStore
from ..store.status import RunStatusError
from .catalog import Catalog
from .evidence import evidence_key, sealer
from .feed import FeedingStore, frames_of
from .watchdog import Watchdog

log = logging.getLogger("openwop_eval.server.run_worker")

STALLED_EXIT = 3
"""The exit code of a worker whose watchdog saw its event loop stall."""


class Outbox:
    """Messages over a connection, from any thread (the loop's, a committer's) — in either
    direction. A send to a process that has gone is dropped: its reader sees the end."""

    def __init__(self, conn: Connection) -> None:
        self.conn, self._lock = conn, threading.Lock()

    def send(self, *message: object) -> None:
        with self._lock, contextlib.suppress(OSError):
            self.conn.send(message)

    def notify(self, run_id: str) -> None:
        self.send("commit", run_id)


class FrameSender:
    """Sends the host each commit of a run its streams follow, as frames, before the
    commit's wake-up (the tap of this worker's :class:`FeedingStore`)."""

    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox
        self.followed: set[str] = set()
        """The runs whose frames the host wants: those its streams follow."""

    def committed(self, run_id: str, docs: Sequence[object]) -> None:
        if run_id not in self.followed:
            return
        rows = [d for d in docs if isinstance(d, EventRow)]
        frames = frames_of(rows) if len(rows) == len(docs) else None
        if frames is not None:  # else the host reads them from the store when it wakes
            self.outbox.send("frames", run_id, frames)


class Worker:
    def __init__(
        self, catalog: Catalog, service: RunService, frames: FrameSender, outbox: Outbox
    ) -> None:
        self.catalog, self.service, self.frames, self.outbox = catalog, service, frames, outbox
        self.runs: dict[str, ActiveRun | None] = {}  # None: being reopened
        self.asked: dict[str, str] = {}  # "cancel" or "stop", asked before it was ready
        self.tasks: set[asyncio.Task[None]] = set()

    def executions(self) -> dict[int, str]:
        """The runs playing here, by the identity of their execution (the watchdog's
        thread reads it while the loop is held)."""
        return {id(a.execution): r for r, a in list(self.runs.items()) if a is not None}

    def handle(self, message: tuple[Any, ...]) -> None:
        kind, run_id = message[0], message[1]
        if kind == "follow" or (kind == "run" and message[2]):
            self.frames.followed.add(run_id)
        if kind == "run":
            self.runs[run_id] = None
            task = asyncio.create_task(self.play(run_id))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        elif kind in ("cancel", "stop") and run_id in self.runs:
            active = self.runs[run_id]
            if active is None:  # still being made ready
                self.asked[run_id] = kind
            elif kind == "stop":
                active.stop()
            else:
                active.cancel()

    async def play(self, run_id: str) -> None:
        try:
            active = await asyncio.to_thread(self.ready, run_id)
            if active is not None:
                self.runs[run_id] = active
                asked = self.asked.pop(run_id, None)
                if asked == "stop":
                    active.stop()
                elif asked == "cancel":
                    active.cancel()
                await active.execute()
        except asyncio.CancelledError:
            pass
        except StoreUnavailableError:  # not the run's failure: it is open, to resume
            log.warning("eval run %s is left open: the store is unavailable", run_id)
        except LogVersionError as exc:  # a newer version wrote it: left open, for one
            log.warning("eval run %s is left open: %s", run_id, exc)
        except Exception:
            log.exception("eval run %s failed", run_id)
        finally:
            self.runs.pop(run_id, None)
            self.asked.pop(run_id, None)
            self.frames.followed.discard(run_id)
            self.outbox.send("ended", run_id)

    def ready(self, run_id: str) -> ActiveRun | None:
        """The run made ready here, as recovery would; None when it is over or ended."""
        try:
            reopened = self.service.reopen(run_id, self.catalog.known)
        except RunEndedError as ended:
            log.warning("ended eval run %s: %s", run_id, ended.failure.message)
            return None
        except RunError:
            return None
        agent = self.catalog.agents.get(reopened.run.agent_id)
        if agent is None:  # not with the host's configuration; a run of another host
            self.service.fail(run_id, AGENT_GONE)
            return None
        options = agent.options(reopened.run.tenant)
        try:
            return self.service.resume(reopened, agent.agent, options, agent.judge, agent.live)
        except RunStatusError:  # it has ended since it was read: nothing to resume
            return None
        except RunError:  # what the agent needs to run the suite is gone (as manager.py)
            self.service.fail(run_id, AGENT_GONE)
            return None


def _stalled(outbox: Outbox, run_id: str, seconds: float) -> None:
    """On the watchdog's thread: the loop is held and cannot be taken back; say whose run
    held it and stop, with no further commit (the host resumes the others)."""
    log.error(
        "an agent held the run worker's event loop for %.1f s (eval run %s); the worker stops",
        seconds,
        run_id,
    )
    outbox.send("stalled", run_id)
    os._exit(STALLED_EXIT)


async def serve(conn: Connection) -> None:
    config, url, lease, paths = conn.recv()
    sys.path[:] = paths
    outbox = Outbox(conn)
    catalog = Catalog(config)
    store = Store(url)
    frames = FrameSender(outbox)
    key = evidence_key(config, HostStore(store))
    service = RunService(
        FeedingStore(store, frames.committed), outbox.notify, lease, sealer(config, key)
    )
    worker = Worker(catalog, service, frames, outbox)
    loop = asyncio.get_running_loop()
    closed = loop.create_future()

    def receive() -> None:  # blocking reads, off the loop
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                loop.call_soon_threadsafe(closed.set_result, None)
                return
            loop.call_soon_threadsafe(worker.handle, message)

    threading.Thread(target=receive, name="openwop-eval-worker-inbox", daemon=True).start()
    stall_s = config.limits.agent_stall_s
    agent_calls = {trial._invoke.__code__}  # where a trial waits on its agent
    Watchdog(loop, stall_s, worker.executions, partial(_stalled, outbox), agent_calls).start()
    outbox.send("ready", None)
    await closed
    if worker.runs:
        # The host closed without stopping them: it died. Not one more commit — its next
        # start resumes them from what is committed, and must not find us still writing.
        os._exit(1)
    await catalog.aclose()


RUNNING = False
"""True in a run worker's process."""


def main(argv: Sequence[str]) -> int:
    global RUNNING
    RUNNING = True
    die_with(int(argv[1]))  # then nothing here can write beside the host's next start
    for number in (signal.SIGINT, signal.SIGTERM):  # a terminal's ^C, a service manager's
        signal.signal(number, signal.SIG_IGN)  # stop: the host stops our runs, then us
    gc_tuning.tune()  # as the host's own process has it (cli/main.py)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    conn = Connection(int(argv[0]))
    try:  # on uvloop, as uvicorn runs the host's loop
        run_fast(serve(conn))
    except Exception as exc:  # the host sees the connection close and says so
        log.error("the run worker stopped: %s", exc)
        return 1
    logging.shutdown()
    os._exit(0)  # everything is committed: an interpreter's teardown would only cost time
