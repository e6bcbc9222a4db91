"""The store: migrations match the tables the code uses, on SQLite and on PostgreSQL; runs,
events and idempotency claims behave."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from openwop_eval.protocol.deployments import Deployment
from openwop_eval.store import RunRecord, Store, StoreError
from openwop_eval.store.host import HostStore
from openwop_eval.store.migrations import __path__ as migrations_path
from openwop_eval.store.schema import metadata
from openwop_eval.store.sql import HEAD, schema_revision


@pytest.fixture
def open_store(database: str) -> Iterator[Callable[[], Store]]:
    opened: list[Store] = []

    def make() -> Store:
        opened.append(Store(database))
        return opened[-1]

    yield make
    for store in opened:
        store.close()


def run(store: Store, run_id: str, tenant: str = "acme") -> RunRecord:
    return store.create_run(
        RunRecord(
            run_id,
            tenant,
            "running",
            "a.b.evals.c",
            "1.0.0",
            "scripted:x",
            "agent",
            {"suiteId": "a.b.evals.c"},
        )
    )


def test_migrations_build_exactly_the_tables_the_code_uses(open_store: Callable[[], Store]) -> None:
    store = open_store()
    with store.engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), metadata)
    assert differences == []
    assert schema_revision(store.engine) == HEAD
    open_store()  # opening again applies nothing and fails nothing


def test_a_store_at_an_unknown_revision_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'newer.sqlite'}"
    Store(url).close()
    engine = sa.create_engine(url)
    with engine.begin() as connection:  # as a newer version of this tool would leave it
        connection.execute(sa.text("UPDATE alembic_version SET version_num = '0099'"))
    engine.dispose()
    with pytest.raises(StoreError, match=r"cannot migrate the store at .*'0099'"):
        Store(url)


def test_the_store_knows_the_newest_migration() -> None:
    # An up-to-date store opens without alembic; a new migration must move HEAD with it.
    assert ScriptDirectory(migrations_path[0]).get_current_head() == HEAD


def test_events_are_append_only_in_sequence(open_store: Callable[[], Store]) -> None:
    store = open_store()
    record = run(store, "acme/" + "a" * 20)
    docs = [
        {"eventId": f"ev-{i:020d}", "type": "x.y", "sequence": i, "payload": {"i": i}}
        for i in range(5)
    ]
    store.append(record.run_id, docs[:3])
    store.append(record.run_id, docs[3:], [("t", 0, "inv-1", {"output": "o"})])
    assert [d["sequence"] for d in store.events(record.run_id, after=1)] == [2, 3, 4]
    assert store.last_sequence(record.run_id) == 4
    assert store.trial_results(record.run_id)[("t", 0)]["output"] == "o"


def test_runs_list_newest_first_per_tenant_with_cursor(open_store: Callable[[], Store]) -> None:
    store = open_store()
    ids = [run(store, f"acme/{i:020d}").run_id for i in range(3)]
    run(store, "globex/" + "b" * 20, tenant="globex")
    page = store.list_runs("acme", limit=2)
    assert [r.run_id for r in page] == ids[::-1][:2]
    rest = store.list_runs("acme", limit=2, before=(page[-1].created_at, page[-1].run_id))
    assert [r.run_id for r in rest] == [ids[0]]
    assert {r.run_id for r in store.unfinished_runs()} == {*ids, "globex/" + "b" * 20}


def test_idempotency_claims(open_store: Callable[[], Store]) -> None:
    host = HostStore(open_store())
    assert host.claim("acme", "op", "k", "h1")[0] == "new"
    assert host.claim("acme", "op", "k", "h1")[0] == "in-flight"
    assert host.claim("acme", "op", "k", "h2")[0] == "mismatch"
    host.settle("acme", "op", "k", 201, {"runId": "r"})
    assert host.claim("acme", "op", "k", "h1") == ("replay", 201, {"runId": "r"})
    assert host.claim("globex", "op", "k", "h2")[0] == "new"  # keys are per tenant
    host.release("globex", "op", "k")
    assert host.claim("globex", "op", "k", "h3")[0] == "new"


def test_deployments_save_with_history(open_store: Callable[[], Store]) -> None:
    host = HostStore(open_store())
    saved = host.save(
        host.view("acme", "ag"),
        [Deployment("acme", "ag", "1.0.0", "active", ["stable"], "acme/r")],
        {"type": "deployment.promoted"},
    )
    assert saved[0].updated_at
    assert [d.wire() for d in host.deployments("acme", "ag")] == [
        {
            "agentId": "ag",
            "version": "1.0.0",
            "state": "active",
            "channels": ["stable"],
            "evalRunId": "acme/r",
        }
    ]
    assert host.deployments("globex", "ag") == []
    assert host.history("acme", "ag") == [{"type": "deployment.promoted"}]
