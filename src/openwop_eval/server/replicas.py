"""This host as one of several replicas on one PostgreSQL database.

Each replica owns the runs it started, or took over, through their leases
(:mod:`openwop_eval.store.leases`). Its heartbeat, every ``heartbeat_seconds``, renews them;
stops here any run whose lease another replica now holds; cancels the runs another replica
was asked to cancel; and takes over running runs whose lease expired — a replica that died —
resuming each through the runner's one resume path: only its missing trials run, and a trial
is committed once whatever the timing (every commit is fenced by the lease, and the store's
keys refuse a trial twice). It takes back the same way its own runs that it no longer plays:
those a store failure left open (runner/run.py), once the store answers again. Event
streams and long polls work from any replica: they read the store, and look at it every
second for what another process committed.

On SQLite there is one replica: a second ``serve`` on the same file is refused at start
(an exclusive lock on a file beside the database, released when the process dies).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import socket
import weakref
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa

from ..store.leases import Lease, Leases
from ..store.sql import StoreUnavailableError, in_memory
from .config import ConfigError, Replicas
from .manager import RunManager

log = logging.getLogger("openwop_eval.server")


def replica_id(config: Replicas, port: int | None) -> str:
    """The configured id, else host name and port (stable across a restart, so a replica
    takes its own runs back at once), else host name and process id."""
    if config.id:
        return config.id
    return f"{socket.gethostname()}:{port if port is not None else os.getpid()}"


class SqliteLock:
    """The one host allowed on a SQLite store: an exclusive lock on ``<database>.host-lock``,
    held until :meth:`release` or until the lock is collected (or the process dies)."""

    def __init__(self, url: str) -> None:
        self._release: Callable[[], object] | None = None
        database = sa.engine.make_url(url).database
        if in_memory(url) or not database:
            return
        path = Path(f"{database}.host-lock")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise ConfigError(
                f"another openwop-eval serve already runs on the SQLite store {database}"
                f" (it holds {path.name}); several host replicas need PostgreSQL"
            ) from None
        self._release = weakref.finalize(self, os.close, fd)  # closing releases the lock

    def release(self) -> None:
        if self._release is not None:
            self._release()


class Replica:
    def __init__(self, manager: RunManager, lease: Lease, config: Replicas, only: bool) -> None:
        self.manager, self.config, self.only = manager, config, only
        self.leases = Leases(manager.store, lease)
        manager.forward_cancel = self.leases.request_cancel  # a run another replica runs
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> list[str]:
        """Take over what is free now, then keep the heartbeat; returns the runs resumed.
        The only replica (SQLite) takes every unfinished run of a host, whoever held it."""
        taken = await asyncio.to_thread(self.leases.take_expired, 1000, self.only, (), True)
        resumed = await self.manager.recover(set(taken))
        self._task = asyncio.create_task(self._loop())
        return resumed

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.heartbeat_seconds)
            try:
                await self.beat()
            except StoreUnavailableError as exc:  # away for now: the next beat tries again
                log.warning("the replica heartbeat could not reach the store: %s", exc)
            except Exception:
                log.exception("the replica heartbeat failed")

    async def beat(self) -> None:
        """Renew our leases, stop the runs we lost, cancel what was asked, take over."""
        running = list(self.manager.active)
        kept, cancel = await asyncio.to_thread(self.leases.renew, running)
        for run_id in running:
            active = self.manager.active.get(run_id)
            if run_id not in kept and active is not None:
                log.warning("eval run %s is now run by another replica", run_id)
                active.stop()
        for run_id in cancel:
            await self.manager.cancel(run_id)
        playing = set(self.manager.tasks)  # renewed above, never claimed (leases.py)
        taken = await asyncio.to_thread(self.leases.take_expired, playing=playing)
        fresh = {run_id for run_id in taken if run_id not in self.manager.tasks}
        if fresh:
            await self.manager.recover(fresh)

    async def stop(self) -> None:
        """Stop the heartbeat and the runs here, and let their leases go at once: another
        replica takes them at its next beat, not after they would have expired."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        running = list(self.manager.active)
        await self.manager.shutdown()
        with contextlib.suppress(Exception):  # the database is away: the leases expire
            await asyncio.to_thread(self.leases.release, running)
