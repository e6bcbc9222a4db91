"""The host's run workers: processes that play its runs (``run_workers`` in its configuration).

A run playing in the HTTP process shares one interpreter lock with every event stream, poll
and summary read there; with many live subscribers the streams' share of the lock lengthens
the run (docs/host.md#run-workers). A worker (worker.py) plays runs in its own interpreter,
writing the same store; each commit comes back here as formatted frames and a wake-up, which
the feed and the hub hand to the streams as if the run played here.

The host still creates every run (and answers its ``POST``), renews its lease, asks for
cancels and stops; a run goes to the worker with the fewest runs. A worker that dies has
its runs resumed by a new one — only their missing trials play — so a crash changes no
verdict. The workers start with the host and stop with it: on shutdown their runs are
stopped (left open for the next start) before their connections close; a host that dies
takes its workers with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, Final

from ..store import RunRecord
from ..store.leases import Lease
from .config import HostConfig
from .feed import Feed, Frames
from .hub import Hub
from .run_worker import Outbox

log = logging.getLogger("openwop_eval.server")

START_S: Final = 120.0
"""How long a worker may take to load the catalog and say it is ready."""
STOP_S: Final = 35.0
"""How long a worker may take to stop its runs (each stops within 30 s) and exit."""


WORKER: Final = (
    "import sys; from openwop_eval.server.run_worker import main; sys.exit(main(sys.argv[1:]))"
)
"""The worker's program (not ``-m``: the package imports the module before it would run)."""


class WorkerError(RuntimeError):
    """A run worker did not start."""


@dataclass(frozen=True)
class Orphans:
    """The runs of a worker that died: to resume, except the one whose agent stalled it
    (ended ``agent_stalled``) and those the host had asked to cancel (ended cancelled)."""

    run_ids: list[str]
    stalled: str | None = None
    cancelled: set[str] = field(default_factory=set)


@dataclass(eq=False)
class WorkerRun:
    """A run playing in a worker, as the host's run manager holds it."""

    run: RunRecord
    worker: Worker
    ended: asyncio.Future[None]

    @property
    def run_id(self) -> str:
        return self.run.run_id

    def cancel(self) -> None:
        self.worker.cancelled.add(self.run_id)
        self.worker.send("cancel", self.run_id)

    def stop(self) -> None:
        self.worker.send("stop", self.run_id)


@dataclass(eq=False)
class Worker:
    process: subprocess.Popen[bytes]
    sock: socket.socket
    outbox: Outbox
    runs: dict[str, WorkerRun] = field(default_factory=dict)
    lost: bool = False
    cancelled: set[str] = field(default_factory=set)
    """Runs the host asked it to cancel."""
    stalled: str | None = None
    """The run whose agent held its event loop, as its watchdog said before it exited."""

    @property
    def conn(self) -> Connection:
        return self.outbox.conn

    def send(self, *message: object) -> None:
        self.outbox.send(*message)


class RunWorkers:
    def __init__(self, count: int, config: HostConfig, url: str, lease: Lease) -> None:
        self.count, self.url, self.lease = count, url, lease
        self.config = config.model_copy(update={"signing": None})  # workers sign nothing
        self.workers: list[Worker] = []
        self.feed: Feed | None = None
        self.hub: Hub | None = None
        self.on_lost: Callable[[Orphans], object] | None = None
        """Called on the loop with the runs a worker that died was playing."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False
        self._replacing: set[asyncio.Future[None]] = set()

    async def start(self, feed: Feed, hub: Hub) -> None:
        self.feed, self.hub, self._loop = feed, hub, asyncio.get_running_loop()
        feed.on_follow = self._follow
        started = await asyncio.gather(
            *(self._spawn() for _ in range(self.count)), return_exceptions=True
        )
        self.workers.extend(w for w in started if isinstance(w, Worker))
        failed = [e for e in started if isinstance(e, BaseException)]
        if failed:
            await self.close()
            raise failed[0]

    async def _spawn(self) -> Worker:
        ours, theirs = socket.socketpair()
        with theirs:
            process = subprocess.Popen(
                [sys.executable, "-c", WORKER, str(theirs.fileno()), str(os.getpid())],
                pass_fds=[theirs.fileno()],
            )
        worker = Worker(process, ours, Outbox(Connection(os.dup(ours.fileno()))))
        worker.send(self.config, self.url, self.lease, list(sys.path))
        try:
            ready = await asyncio.wait_for(asyncio.to_thread(self._first, worker.conn), START_S)
        except (TimeoutError, EOFError, OSError):
            ready = ("no answer",)
        if ready[0] != "ready":
            self._kill(worker)
            code = worker.process.returncode  # its own log line says why
            raise WorkerError(f"a run worker did not start (exit {code})")
        threading.Thread(target=self._read, args=(worker,), daemon=True).start()
        return worker

    @staticmethod
    def _first(conn: Connection) -> tuple[Any, ...]:
        message: tuple[Any, ...] = conn.recv()
        return message

    def launch(self, run: RunRecord) -> WorkerRun:
        """Hand the created (or reopened) run to the least busy worker; on the loop."""
        assert self._loop is not None
        worker = min((w for w in self.workers if not w.lost), key=lambda w: len(w.runs))
        playing = WorkerRun(run, worker, self._loop.create_future())
        worker.runs[run.run_id] = playing
        assert self.feed is not None
        worker.send("run", run.run_id, self.feed.follows(run.run_id))
        return playing

    def _follow(self, run_id: str) -> None:
        """The feed follows the run now: its worker is to send each commit's frames (it
        formats none for a run nobody follows)."""
        for worker in self.workers:
            if run_id in worker.runs:
                worker.send("follow", run_id)

    @property
    def available(self) -> bool:
        return any(not w.lost for w in self.workers)

    async def available_soon(self) -> bool:
        """Whether a worker can take a run, once the replacements under way are done (a
        run started meanwhile would play in the host's process)."""
        while not self.available and self._replacing:
            await asyncio.wait(list(self._replacing))
        return self.available

    def _read(self, worker: Worker) -> None:
        """The worker's messages, read off the loop and handled on it, in order."""
        assert self._loop is not None
        while True:
            try:
                message = worker.conn.recv()
            except (EOFError, OSError):
                break
            with contextlib.suppress(RuntimeError):  # the loop has closed
                self._loop.call_soon_threadsafe(self._handle, worker, message)
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._lost, worker)

    def _handle(self, worker: Worker, message: tuple[Any, ...]) -> None:
        assert self.feed is not None
        assert self.hub is not None
        kind, run_id = message[0], message[1]
        if kind == "frames":
            frames: Frames = message[2]
            self.feed.offer(run_id, frames)
            self.hub.notify(run_id)
        elif kind == "commit":
            self.hub.notify(run_id)
        elif kind == "stalled":
            worker.stalled = run_id
        elif kind == "ended":
            playing = worker.runs.pop(run_id, None)
            if playing is not None and not playing.ended.done():
                playing.ended.set_result(None)

    def _lost(self, worker: Worker) -> None:
        """The worker's connection closed. Its runs end here as tasks; unless the host is
        stopping them, they are resumed in a new worker, from what they committed."""
        if worker.lost:
            return
        worker.lost = True
        orphans = Orphans(list(worker.runs), worker.stalled, worker.cancelled & set(worker.runs))
        for playing in worker.runs.values():
            if not playing.ended.done():
                playing.ended.set_result(None)
        worker.runs.clear()
        if worker in self.workers and not self._closing:
            self.workers.remove(worker)
            task = asyncio.ensure_future(self._replace(worker, orphans))
            self._replacing.add(task)
            task.add_done_callback(self._replacing.discard)

    async def _replace(self, dead: Worker, orphans: Orphans) -> None:
        code = await asyncio.to_thread(self._reap, dead)
        if dead.stalled is None:
            log.error("a run worker stopped (exit %s); starting another", code)
        else:
            log.error("an agent stalled a run worker (eval run %s); starting another", dead.stalled)
        try:
            self.workers.append(await self._spawn())
        except WorkerError as exc:
            log.error("%s; runs play in the host's process until it restarts", exc)
        if orphans.run_ids and self.on_lost is not None:
            self.on_lost(orphans)

    async def close(self) -> None:
        """End every worker's connection (which stops its runs, left open) and wait for
        the processes to exit."""
        self._closing = True
        for task in list(self._replacing):
            task.cancel()
        for worker in self.workers:
            with contextlib.suppress(OSError):  # the worker reads its end; we read its last
                worker.sock.shutdown(socket.SHUT_WR)
        for worker in self.workers:
            await asyncio.to_thread(self._reap, worker)
        self.workers.clear()

    @classmethod
    def _reap(cls, worker: Worker) -> int:
        """The exit code of a worker that is ending, killed if it takes too long."""
        try:
            code = worker.process.wait(STOP_S)
        except subprocess.TimeoutExpired:
            cls._kill(worker)
            code = worker.process.wait()
        with contextlib.suppress(OSError):
            worker.sock.close()
            worker.conn.close()
        return code

    @staticmethod
    def _kill(worker: Worker) -> None:
        worker.process.kill()
        worker.process.wait()
        with contextlib.suppress(OSError):
            worker.sock.close()
            worker.conn.close()
