"""Host-only tables: agent deployments (with their history) and the idempotency cache."""

from __future__ import annotations

from typing import Any, Literal

import sqlalchemy as sa

from ..clock import utc_stamp
from ..deployments import Deployment
from .schema import deployment_history, deployments, idempotency
from .sql import Store, StoreError

Claim = Literal["new", "replay", "mismatch", "in-flight"]


class HostStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    # --- deployments --------------------------------------------------------------------

    def deployments(self, tenant: str, agent_id: str) -> list[Deployment]:
        query = (
            sa.select(deployments)
            .where((deployments.c.tenant == tenant) & (deployments.c.agent_id == agent_id))
            .order_by(deployments.c.updated_at, deployments.c.version)
        )
        with self.store.transaction() as tx:
            return [Deployment(**row) for row in tx.execute(query).mappings()]

    def save(self, changed: list[Deployment], event: dict[str, Any]) -> list[Deployment]:
        """Write the changed records and one history event, all or nothing."""
        stamp = utc_stamp()
        saved = [Deployment(**{**d.__dict__, "updated_at": stamp}) for d in changed]
        with self.store.transaction() as tx:
            for d in saved:
                key = (
                    (deployments.c.tenant == d.tenant)
                    & (deployments.c.agent_id == d.agent_id)
                    & (deployments.c.version == d.version)
                )
                tx.execute(deployments.delete().where(key))
                tx.execute(deployments.insert().values(**d.__dict__))
            if saved:
                tx.execute(
                    deployment_history.insert().values(
                        tenant=saved[0].tenant,
                        agent_id=saved[0].agent_id,
                        event=event,
                        created_at=stamp,
                    )
                )
        return saved

    def history(self, tenant: str, agent_id: str) -> list[dict[str, Any]]:
        query = (
            sa.select(deployment_history.c.event)
            .where(
                (deployment_history.c.tenant == tenant)
                & (deployment_history.c.agent_id == agent_id)
            )
            .order_by(deployment_history.c.id)
        )
        with self.store.transaction() as tx:
            return [row[0] for row in tx.execute(query)]

    # --- idempotency --------------------------------------------------------------------

    def claim(
        self, tenant: str, operation: str, key: str, request_hash: str
    ) -> tuple[Claim, int | None, Any]:
        """Claim an idempotency key: new, a replay of a finished request, or a conflict."""
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
        where = (
            (idempotency.c.tenant == tenant)
            & (idempotency.c.operation == operation)
            & (idempotency.c.key == key)
        )
        with self.store.transaction() as tx:
            row = tx.execute(sa.select(idempotency).where(where)).mappings().first()
        if row is None:
            return self.claim(tenant, operation, key, request_hash)
        if row["request_hash"] != request_hash:
            return "mismatch", None, None
        if row["status_code"] is None:
            return "in-flight", None, None
        return "replay", int(row["status_code"]), row["response"]

    def settle(self, tenant: str, operation: str, key: str, status: int, body: Any) -> None:
        where = (
            (idempotency.c.tenant == tenant)
            & (idempotency.c.operation == operation)
            & (idempotency.c.key == key)
        )
        with self.store.transaction() as tx:
            tx.execute(idempotency.update().where(where).values(status_code=status, response=body))

    def release(self, tenant: str, operation: str, key: str) -> None:
        """Forget a claim whose request failed before it had an answer worth replaying."""
        where = (
            (idempotency.c.tenant == tenant)
            & (idempotency.c.operation == operation)
            & (idempotency.c.key == key)
        )
        with self.store.transaction() as tx:
            tx.execute(idempotency.delete().where(where))
