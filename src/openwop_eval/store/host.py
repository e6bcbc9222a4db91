"""Host-only tables: agent deployments (with their history and revision), the idempotency
cache, and the host's secrets.

An agent's deployments change as one serialized state machine: a change is planned on a
:class:`DeploymentView` (its records and revision, read together) and written by
compare-and-set on that revision, so of concurrent changes one lands and the others are
refused with :class:`DeploymentConflictError` — whatever the database, never two active versions
on a channel (a unique index says so too) and never a history entry for a change that did
not land.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..protocol.deployments import Deployment, channel_of, conform_event
from ..runtime.clock import utc_stamp
from .records import HOST_AGENT, RunRecord
from .schema import (
    deployment_heads,
    deployment_history,
    deployments,
    host_secrets,
    idempotency,
    runs,
)
from .sql import Store, StoreError, Within

Claim = Literal["new", "replay", "mismatch", "in-flight"]

CLAIM_TTL_S = 300
"""An unsettled idempotency claim older than this is a request that died with its process
(no request the host answers takes so long): the key may be claimed again."""


class DeploymentConflictError(StoreError):
    """Another change to the agent's deployments landed after this one was planned."""


@dataclass(frozen=True)
class HistoryEntry:
    """One deployment event of an agent: its place in the agent's history (0 the first),
    the event, and when it was recorded."""

    sequence: int
    event: dict[str, Any]
    recorded_at: str


_MAX_OFFSET = 2**62
"""Beyond any history's length, and within every database's OFFSET."""


@dataclass(frozen=True)
class DeploymentView:
    """An agent's deployment records and the revision they are at, read in one transaction."""

    records: list[Deployment]
    revision: int


class HostStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    # --- deployments --------------------------------------------------------------------

    def deployments(self, tenant: str, agent_id: str) -> list[Deployment]:
        return self.view(tenant, agent_id).records

    def view(self, tenant: str, agent_id: str) -> DeploymentView:
        mine = (deployments.c.tenant == tenant) & (deployments.c.agent_id == agent_id)
        columns = [c for c in deployments.c if c.name != "active_channel"]
        query = sa.select(*columns).where(mine)
        head = (deployment_heads.c.tenant == tenant) & (deployment_heads.c.agent_id == agent_id)
        with self.store.transaction() as tx:
            revision = tx.execute(sa.select(deployment_heads.c.revision).where(head)).scalar()
            rows = tx.execute(
                query.order_by(deployments.c.updated_at, deployments.c.version)
            ).mappings()
            records = [Deployment(**row) for row in rows]
        return DeploymentView(records, int(revision or 0))

    def save(
        self,
        view: DeploymentView,
        changed: list[Deployment],
        event: dict[str, Any],
        within: Within | None = None,
    ) -> list[Deployment]:
        """Write the changed records and one history event, all or nothing, if the agent's
        deployments are still at ``view.revision``; else :class:`DeploymentConflictError`.
        ``within`` runs in the same transaction (settling the request's idempotency key)."""
        if not changed:
            return []
        stamp = utc_stamp()
        saved = [Deployment(**{**d.__dict__, "updated_at": stamp}) for d in changed]
        tenant, agent_id = saved[0].tenant, saved[0].agent_id
        try:
            with self.store.transaction() as tx:
                _advance(tx, tenant, agent_id, view.revision)  # first: the lock is taken here
                for d in saved:  # every old row first: the unique active channel holds
                    key = (
                        (deployments.c.tenant == d.tenant)
                        & (deployments.c.agent_id == d.agent_id)
                        & (deployments.c.version == d.version)
                    )
                    tx.execute(deployments.delete().where(key))
                for d in saved:
                    active = channel_of(d) if d.state == "active" else None
                    tx.execute(deployments.insert().values(**d.__dict__, active_channel=active))
                tx.execute(
                    deployment_history.insert().values(
                        tenant=tenant, agent_id=agent_id, event=event, created_at=stamp
                    )
                )
                if within is not None:
                    within(tx)
        except DeploymentConflictError:
            raise
        except StoreError as exc:
            if isinstance(exc.__cause__, sa.exc.IntegrityError):  # a racing first change
                raise DeploymentConflictError(str(exc)) from exc
            raise
        return saved

    def history(self, tenant: str, agent_id: str) -> list[dict[str, Any]]:
        """The agent's deployment events, oldest first, as RFC 0082 defines them."""
        return [entry.event for entry in self.history_page(tenant, agent_id)]

    def history_page(
        self, tenant: str, agent_id: str, after: int = -1, limit: int | None = None
    ) -> list[HistoryEntry]:
        """The agent's deployment events after the ``after``-th (0 is the first), at most
        ``limit``; each read as RFC 0082 defines it, whatever version wrote it."""
        query = (
            sa.select(deployment_history.c.event, deployment_history.c.created_at)
            .where(
                (deployment_history.c.tenant == tenant)
                & (deployment_history.c.agent_id == agent_id)
            )
            .order_by(deployment_history.c.id)
            .offset(start := min(max(after + 1, 0), _MAX_OFFSET))
            .limit(limit)
        )
        with self.store.transaction() as tx:
            rows = tx.execute(query).all()
        return [
            HistoryEntry(start + i, conform_event(event), created_at)
            for i, (event, created_at) in enumerate(rows)
        ]

    # --- the gate's evidence -------------------------------------------------------------

    def newest_completed(
        self, tenant: str, suite: tuple[str, str], agent_id: str, agent_version: str
    ) -> RunRecord | None:
        """The newest completed eval run a host ran of one suite, agent and agent version
        in a tenant, read whole (a newer run supersedes an older one as evidence)."""
        query = (
            sa.select(runs)
            .where(
                (runs.c.tenant == tenant)
                & (runs.c.mode == "eval")
                & (runs.c.status == "completed")
                & (runs.c.suite_id == suite[0])
                & (runs.c.suite_version == suite[1])
                & (runs.c.agent_id == agent_id)
                & runs.c.agent_spec.startswith(HOST_AGENT)
                & (runs.c.agent_version == agent_version)
            )
            .order_by(runs.c.created_at.desc(), runs.c.run_id.desc())
            .limit(1)
        )
        with self.store.transaction() as tx:
            row = tx.execute(query).mappings().first()
        return None if row is None else RunRecord(**row)

    # --- idempotency --------------------------------------------------------------------

    def claim(
        self, tenant: str, operation: str, key: str, request_hash: str
    ) -> tuple[Claim, int | None, Any]:
        """Claim an idempotency key: new, a replay of a finished request, or a conflict.
        A claim left unsettled for :data:`CLAIM_TTL_S` (its request died with its process)
        is taken over as new."""
        try:
            with self.store.transaction() as tx:
                tx.execute(
                    idempotency.insert().values(
                        tenant=tenant,
                        operation=operation,
                        key=key,
                        request_hash=request_hash,
                        created_at=utc_stamp(),
                    )
                )
            return "new", None, None
        except StoreError as exc:
            if not isinstance(exc.__cause__, sa.exc.IntegrityError):
                raise  # the key exists only on an integrity error: read what it holds
        where = _key(tenant, operation, key)
        with self.store.transaction() as tx:
            row = tx.execute(sa.select(idempotency).where(where)).mappings().first()
            if row is not None and row["status_code"] is None and _stale(row["created_at"]):
                taken = tx.execute(
                    idempotency.update()
                    .where(where & idempotency.c.status_code.is_(None))
                    .where(idempotency.c.created_at == row["created_at"])
                    .values(request_hash=request_hash, created_at=utc_stamp())
                ).rowcount
                if taken == 1:
                    return "new", None, None
        if row is None:
            return self.claim(tenant, operation, key, request_hash)
        if row["request_hash"] != request_hash:
            return "mismatch", None, None
        if row["status_code"] is None:
            return "in-flight", None, None
        return "replay", int(row["status_code"]), row["response"]

    def settle(self, tenant: str, operation: str, key: str, status: int, body: Any) -> None:
        with self.store.transaction() as tx:
            settle_in(tx, tenant, operation, key, status, body)

    def release(self, tenant: str, operation: str, key: str) -> None:
        """Forget a claim whose request failed before it had an answer worth replaying."""
        with self.store.transaction() as tx:
            tx.execute(
                idempotency.delete().where(
                    _key(tenant, operation, key) & idempotency.c.status_code.is_(None)
                )
            )

    def release_unsettled(self) -> int:
        """Forget every unsettled claim: at the start of the only host of a store, no
        request that made one is still being answered (a crash left them)."""
        with self.store.transaction() as tx:
            return int(
                tx.execute(idempotency.delete().where(idempotency.c.status_code.is_(None))).rowcount
            )

    # --- secrets ------------------------------------------------------------------------

    def secret(self, name: str) -> str:
        """The host secret ``name``, made (32 random bytes, hex) the first time it is asked
        for; every replica on the store reads the same."""
        query = sa.select(host_secrets.c.value).where(host_secrets.c.name == name)
        with self.store.transaction() as tx:
            value = tx.execute(query).scalar()
        if value is not None:
            return str(value)
        try:
            with self.store.transaction() as tx:
                tx.execute(host_secrets.insert().values(name=name, value=secrets.token_hex(32)))
        except StoreError as exc:
            if not isinstance(exc.__cause__, sa.exc.IntegrityError):
                raise  # another replica made it first: read theirs
        with self.store.transaction() as tx:
            return str(tx.execute(query).scalar_one())


def settle_in(
    tx: Connection, tenant: str, operation: str, key: str, status: int, body: Any
) -> None:
    """Settle a claim inside another write's transaction: the answer is kept exactly when
    what it answers for is."""
    tx.execute(
        idempotency.update()
        .where(_key(tenant, operation, key))
        .values(status_code=status, response=body)
    )


def _key(tenant: str, operation: str, key: str) -> sa.ColumnElement[bool]:
    return (
        (idempotency.c.tenant == tenant)
        & (idempotency.c.operation == operation)
        & (idempotency.c.key == key)
    )


def _stale(created_at: str) -> bool:
    try:
        made = datetime.fromisoformat(created_at.removesuffix("Z")).replace(tzinfo=UTC)
    except ValueError:
        return True  # not a stamp of ours: nothing waits on it
    return datetime.now(UTC) - made > timedelta(seconds=CLAIM_TTL_S)


def _advance(tx: Connection, tenant: str, agent_id: str, revision: int) -> None:
    """Move the agent's revision from ``revision`` to the next, or refuse: compare-and-set
    (on PostgreSQL a concurrent update waits for the other's commit, then finds the
    revision moved; SQLite serializes writers)."""
    head = (deployment_heads.c.tenant == tenant) & (deployment_heads.c.agent_id == agent_id)
    if revision == 0:
        tx.execute(deployment_heads.insert().values(tenant=tenant, agent_id=agent_id, revision=1))
        return  # a racing first change fails on the primary key
    moved = tx.execute(
        deployment_heads.update()
        .where(head & (deployment_heads.c.revision == revision))
        .values(revision=revision + 1)
    ).rowcount
    if moved != 1:
        raise DeploymentConflictError(f"the deployments of {agent_id} changed meanwhile")
