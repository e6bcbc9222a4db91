"""Run leases: which host replica runs which run, when several share one PostgreSQL database.

A replica owns a run through its row in ``run_leases``: its id and an expiry, renewed by a
heartbeat and by every commit of the run. A replica that dies stops renewing; once the lease
has expired another replica claims the run (``SELECT … FOR UPDATE SKIP LOCKED``, so two
never claim the same one) and resumes it through the runner's one resume path.

Every commit of a leased run is *fenced*: in the same transaction as its events, the lease is
renewed only if it is still the committer's (:class:`Fence`). A replica that stalled past its
lease (a long pause, a partition) and comes back finds its commit refused with
:class:`LeaseLostError` instead of committing beside the new owner; and the store's keys refuse a
trial committed twice whatever happens. Expiry is read on the database's clock, so the
replicas' clocks need not agree.

Lock order (PostgreSQL). A commit of a run updates its ``run_leases`` row (the fence), then
inserts ``events`` and ``trial_results``, whose foreign keys take ``KEY SHARE`` locks on the
``runs`` row. Taking runs over locks ``runs`` rows ``FOR NO KEY UPDATE``, which does not
conflict with ``KEY SHARE``, and never a run this replica is playing, so it neither waits on a
live run's commit while holding what that commit needs nor is waited on by one. The other
operations touch one table each (``renew``, ``request_cancel``, ``release``: ``run_leases``;
a status change: ``runs``), rows in ``run_id`` order. Whatever is left (another replica's
multi-row statements) the store retries as a transient failure (store/retry.py).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .records import HOST_AGENT
from .schema import run_leases, runs
from .sql import Store, StoreError, Within
from .status import UNFINISHED

__all__ = ["HOST_AGENT", "Fence", "Lease", "LeaseLostError", "Leases", "db_now"]


class LeaseLostError(StoreError):
    """The run's lease is no longer this replica's: another replica runs it now."""


def db_now(tx: Connection) -> float:
    """Seconds since the epoch on the database's clock (SQLite: this host's, the only one)."""
    if tx.dialect.name == "postgresql":
        now = tx.execute(sa.text("SELECT extract(epoch FROM clock_timestamp())")).scalar_one()
        return float(now)
    return time.time()


class Fence:
    """Checks, inside a commit's transaction, that ``owner`` still holds the run's lease,
    and renews it for ``ttl`` seconds."""

    def __init__(self, run_id: str, owner: str, ttl: float) -> None:
        self.run_id, self.owner, self.ttl = run_id, owner, ttl

    def __call__(self, tx: Connection) -> None:
        expires = db_now(tx) + self.ttl
        kept = tx.execute(
            run_leases.update()
            .where((run_leases.c.run_id == self.run_id) & (run_leases.c.owner == self.owner))
            .values(expires_at=expires)
        ).rowcount
        if kept != 1:
            raise LeaseLostError(f"run {self.run_id} is leased to another replica now")


@dataclass(frozen=True)
class Lease:
    """What a replica holds its runs under: its id and the lease's length. ``fenced`` is
    False for the only host of a SQLite store: the file lock that makes it the only one
    already excludes a second committer, so its commits skip the lease check (two
    statements each, about a tenth of a fast run's time); the heartbeat still renews."""

    owner: str
    ttl: float
    fenced: bool = True

    def fence(self, run_id: str) -> Fence | None:
        return Fence(run_id, self.owner, self.ttl) if self.fenced else None

    def claim_in(self, run_id: str) -> Within:
        """Lease a run as it is created, in the transaction that creates it: a run never
        exists unleased, for another replica to take."""
        return lambda tx: _upsert(tx, [run_id], self.owner, db_now(tx) + self.ttl)


class Leases:
    """The lease operations of one replica on a store."""

    def __init__(self, store: Store, lease: Lease) -> None:
        self.store, self.lease = store, lease
        self.owner, self.ttl = lease.owner, lease.ttl

    def renew(self, run_ids: Sequence[str]) -> tuple[set[str], set[str]]:
        """Renew the leases of these runs that are still ours; returns those, and those of
        them another replica was asked to cancel. A run missing from the first was taken
        over, and must stop here."""
        if not run_ids:
            return set(), set()
        mine = (run_leases.c.owner == self.owner) & run_leases.c.run_id.in_(sorted(run_ids))

        def work(tx: Connection) -> list[tuple[str, bool]]:
            tx.execute(run_leases.update().where(mine).values(expires_at=db_now(tx) + self.ttl))
            query = sa.select(run_leases.c.run_id, run_leases.c.cancel_requested).where(mine)
            return [(str(r), bool(c)) for r, c in tx.execute(query)]

        rows = self.store.atomic(work)
        return {r for r, _ in rows}, {r for r, cancel in rows if cancel}

    def request_cancel(self, run_id: str) -> bool:
        """Ask the replica that runs ``run_id`` to cancel it (at its next heartbeat); False
        when no replica holds it."""
        ask = run_leases.update().where(run_leases.c.run_id == run_id).values(cancel_requested=True)
        return bool(self.store.atomic(lambda tx: tx.execute(ask).rowcount))

    def take_expired(
        self,
        limit: int = 50,
        every: bool = False,
        playing: Collection[str] = (),
        restart: bool = False,
    ) -> list[str]:
        """Claim unfinished host runs whose lease expired (a replica died, or a store failure
        left the run open and its lease was no longer renewed), or that never had one: at
        most ``limit``, each by exactly one replica however many look at once. ``restart``:
        also those this replica held before it restarted (live leases of its own, which
        only the start-up pass may take: later, a run being started holds one before it
        plays). ``every``: all of them, whoever held them (the only replica). ``playing``:
        runs this replica plays now, never taken (their leases are renewed, not claimed)."""

        def work(tx: Connection) -> list[str]:
            now = db_now(tx)
            joined = runs.outerjoin(run_leases, run_leases.c.run_id == runs.c.run_id)
            free = run_leases.c.run_id.is_(None) | (run_leases.c.expires_at < now)
            if restart:
                free |= run_leases.c.owner == self.owner
            unfinished = runs.c.status.in_(UNFINISHED)  # pending: waiting to play
            where = unfinished & runs.c.agent_spec.startswith(HOST_AGENT)
            if not every:
                where &= free
            if playing:
                where &= runs.c.run_id.not_in(sorted(playing))
            query = (
                sa.select(runs.c.run_id)
                .select_from(joined)
                .where(where)
                .order_by(runs.c.created_at, runs.c.run_id)
                .limit(limit)
            )
            if tx.dialect.name == "postgresql":  # NO KEY UPDATE: see the lock order above
                query = query.with_for_update(of=runs, skip_locked=True, key_share=True)
            taken = list(tx.execute(query).scalars())
            _upsert(tx, taken, self.owner, now + self.ttl)
            return taken

        return self.store.atomic(work)

    def release(self, run_ids: Sequence[str]) -> None:
        """Let these runs go at once (a graceful shutdown): another replica takes them at
        its next look instead of after the lease would have expired."""
        if not run_ids:
            return
        mine = (run_leases.c.owner == self.owner) & run_leases.c.run_id.in_(sorted(run_ids))
        let_go = run_leases.update().where(mine).values(expires_at=0.0)
        self.store.atomic(lambda tx: tx.execute(let_go))


def _upsert(tx: Connection, run_ids: Sequence[str], owner: str, expires: float) -> None:
    for run_id in sorted(run_ids):  # one order of row locks for every multi-row write
        values = {"owner": owner, "expires_at": expires, "cancel_requested": False}
        updated = tx.execute(
            run_leases.update().where(run_leases.c.run_id == run_id).values(**values)
        ).rowcount
        if not updated:
            tx.execute(run_leases.insert().values(run_id=run_id, **values))
