"""An agent's deployment events, as RFC 0082 defines them, read at
``GET /agents/{agentId}/deployments/events``: every event a lifecycle writes is its official
definition; the history is the caller's tenant's, needs ``agents:read``, pages by
``afterSequence`` and carries no text a caller sent; a store written before revision 0007
is migrated (its rows rewritten) and its gate still works; an old-shape row that reaches a
migrated store is read in the protocol's shape."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from openwop_eval.server.config import ApiKey, DeploymentPolicy
from openwop_eval.store.migrations import __path__ as migrations_path
from openwop_eval.store.schema import deployment_heads, deployment_history, deployments
from tests.hosts import _postgres_database
from tests.server.inprocess import CAREFUL, REFUNDS_SUITE, AppHost
from tests.server.official import payload_errors

DEPLOYMENTS = f"/agents/{CAREFUL}/deployments"
EVENTS = f"{DEPLOYMENTS}/events"
RUN = "acme/" + "e" * 24
REASON = "a caller's free text: customer ACME-4411 saw errors"


def events(app: AppHost, key: str = "acme-key", after: int | None = None) -> dict[str, Any]:
    query = "" if after is None else f"?afterSequence={after}"
    response = app.request("GET", EVENTS + query, key=key)
    assert response.status_code == 200, response.text
    page: dict[str, Any] = response.json()
    return page


def kinds(page: dict[str, Any]) -> list[tuple[str, str | None]]:
    """Each event's type and the state it names (``toState``), in order."""
    return [(e["type"], e["payload"].get("toState")) for e in page["events"]]


def transition(app: AppHost, **body: Any) -> httpx.Response:
    return app.request("POST", DEPLOYMENTS, json=body)


def test_a_lifecycle_reads_back_as_the_protocol_defines_it(fresh_app: AppHost) -> None:
    passing = fresh_app.run_to_end(REFUNDS_SUITE, CAREFUL)
    steps: list[dict[str, Any]] = [
        {"version": "1.0.0", "transition": "promote"},  # draft → test
        {"version": "1.0.0", "transition": "promote", "evalRunId": passing},  # → staged
        {"version": "1.0.0", "transition": "promote", "evalRunId": passing},  # → active
        {"version": "1.0.0", "transition": "pause", "reason": REASON},
        {"version": "1.0.0", "transition": "promote", "evalRunId": passing},  # resumed
        {"version": "1.0.0", "transition": "deprecate", "reason": REASON},
    ]
    for step in steps:
        assert transition(fresh_app, **step).status_code == 200
    page = events(fresh_app)
    assert page["agentId"] == CAREFUL
    assert page["hasMore"] is False
    assert kinds(page) == [
        ("deployment.promoted", "test"),
        ("deployment.promoted", "staged"),
        ("deployment.promoted", "active"),
        ("deployment.state-changed", "paused"),
        ("deployment.promoted", "active"),
        ("deployment.state-changed", "deprecated"),
    ]
    assert [e["sequence"] for e in page["events"]] == list(range(6))
    assert all(isinstance(e["timestamp"], str) and e["timestamp"] for e in page["events"])
    assert [payload_errors(e) for e in page["events"]] == [[]] * 6
    assert page["events"][3]["payload"] == {
        "agentId": CAREFUL,
        "version": "1.0.0",
        "fromState": "active",
        "toState": "paused",
    }
    assert page["events"][2]["payload"]["evalRunId"] == passing
    assert "ACME-4411" not in str(page)  # content-free: the reason given is nowhere
    state = fresh_app.app.state.host
    assert [{"type": e["type"], "payload": e["payload"]} for e in page["events"]] == (
        state.host_store.history("acme", CAREFUL)
    )


def test_the_history_is_the_tenants_and_needs_agents_read(make_app: Callable[..., AppHost]) -> None:
    app = make_app(deployment=DeploymentPolicy(required_eval=False))
    config = app.app.state.host.config
    runs_only = ApiKey(name="acme-runs", tenant="acme", key="acme-runs-only", scopes=("runs:read",))
    app.close()
    app = AppHost(
        config.database, config.model_copy(update={"api_keys": (*config.api_keys, runs_only)})
    )
    try:
        assert transition(app, version="1.0.0", transition="promote").status_code == 200
        assert len(events(app)["events"]) == 1
        assert len(events(app, key="acme-read-only")["events"]) == 1
        assert events(app, key="globex-key") == {"agentId": CAREFUL, "events": [], "hasMore": False}
        refused = app.request("GET", EVENTS, key="acme-runs-only")
        assert (refused.status_code, refused.json()["error"]) == (403, "forbidden")
        assert app.request("GET", EVENTS, key=None).status_code == 401
        unknown = app.request("GET", "/agents/acme.nobody/deployments/events")
        assert (unknown.status_code, unknown.json()["error"]) == (404, "not_found")
    finally:
        app.close()


def test_the_history_pages_by_sequence(make_app: Callable[..., AppHost]) -> None:
    app = make_app(deployment=DeploymentPolicy(required_eval=False))
    assert (
        transition(app, version="1.0.0", transition="promote", toState="active").status_code == 200
    )
    for _ in range(55):  # 110 more events: past one page
        assert transition(app, version="1.0.0", transition="pause").status_code == 200
        assert transition(app, version="1.0.0", transition="promote").status_code == 200
    first = events(app)
    assert first["hasMore"] is True
    assert [e["sequence"] for e in first["events"]] == list(range(100))
    rest = events(app, after=first["events"][-1]["sequence"])
    assert rest["hasMore"] is False
    assert [e["sequence"] for e in rest["events"]] == list(range(100, 111))
    assert kinds(rest)[-2:] == [
        ("deployment.state-changed", "paused"),
        ("deployment.promoted", "active"),
    ]
    assert events(app, after=110)["events"] == []
    for bad in ("-2", "x", "1.5", "99999999999999999999"):
        refused = app.request("GET", f"{EVENTS}?afterSequence={bad}")
        assert (refused.status_code, refused.json()["error"]) == (400, "validation_error"), bad


# --- a store from before revision 0007 ------------------------------------------------------


PROMOTED, ROLLED_BACK, CHANGED = (
    "deployment.promoted",
    "deployment.rolled-back",
    "deployment.state-changed",
)
STABLE = {"channel": "stable"}
OLD_HISTORY: list[tuple[str, str, dict[str, Any]]] = [  # tenant, type, payload as once written
    ("acme", PROMOTED, {"toVersion": "0.8.0", "toState": "active", "fromState": "draft", **STABLE}),
    (
        "acme",
        PROMOTED,
        {"toVersion": "0.9.0", "toState": "active", "fromState": "draft", "fromVersion": "0.8.0"}
        | STABLE
        | {"evalRunId": RUN},
    ),
    (
        "acme",
        ROLLED_BACK,
        {"toVersion": "0.8.0", "toState": "active", "fromState": "deprecated"}
        | {"fromVersion": "0.9.0", "evalRunId": RUN}
        | STABLE,
    ),
    ("acme", CHANGED, {"toVersion": "0.8.0", "toState": "paused", "fromState": "active", **STABLE}),
    (
        "acme",
        PROMOTED,
        {"toVersion": "0.8.0", "toState": "active", "fromState": "paused", **STABLE},
    ),
    ("globex", PROMOTED, {"toVersion": "0.1.0", "toState": "test", "fromState": "draft", **STABLE}),
]

MIGRATED = [
    {"type": PROMOTED, "payload": {"toVersion": "0.8.0", "toState": "active", **STABLE}},
    {
        "type": PROMOTED,
        "payload": {"toVersion": "0.9.0", "toState": "active", "fromVersion": "0.8.0"}
        | STABLE
        | {"evalRunId": RUN},
    },
    {
        "type": ROLLED_BACK,
        "payload": {"fromVersion": "0.9.0", "toVersion": "0.8.0", "rollbackPointer": "0.8.0"},
    },
    {
        "type": CHANGED,
        "payload": {"version": "0.8.0", "fromState": "active", "toState": "paused"},
    },
    {"type": PROMOTED, "payload": {"toVersion": "0.8.0", "toState": "active", **STABLE}},
]


def _with_agent(event: dict[str, Any]) -> dict[str, Any]:
    return {"type": event["type"], "payload": {"agentId": CAREFUL, **event["payload"]}}


def _engine(url: str) -> sa.Engine:
    return sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))


def _old_store(url: str) -> None:
    """A store at revision 0006 holding what the code before 0007 wrote: two versions of the
    careful agent (0.8.0 active, 0.9.0 rolled back) and their history, in two tenants."""
    config = Config()
    config.set_main_option("script_location", migrations_path[0])
    engine = _engine(url)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0006")
        record = {"tenant": "acme", "agent_id": CAREFUL, "channels": ["stable"], "updated_at": "t"}
        active = {"version": "0.8.0", "state": "active", "active_channel": "stable"}
        back = {"version": "0.9.0", "state": "rolled-back", "rollback_pointer": "0.8.0"}
        for row in (active, back):
            connection.execute(deployments.insert().values(**record, **row))
        connection.execute(
            deployment_heads.insert().values(tenant="acme", agent_id=CAREFUL, revision=5)
        )
        for tenant, kind, payload in OLD_HISTORY:
            event = {"type": kind, "payload": {"agentId": CAREFUL, **payload}}
            connection.execute(
                deployment_history.insert().values(
                    tenant=tenant, agent_id=CAREFUL, event=event, created_at="t"
                )
            )
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def old_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'old.sqlite'}"
        _old_store(url)
        yield url
    else:
        for url in _postgres_database():
            _old_store(url)
            yield url


def test_a_store_from_before_is_migrated_and_its_gate_still_works(old_database: str) -> None:
    app = AppHost(old_database)  # opening the store migrates it to the head
    try:
        engine = _engine(old_database)
        with engine.connect() as connection:
            stored = (
                connection.execute(
                    sa.select(deployment_history.c.event)
                    .where(deployment_history.c.tenant == "acme")
                    .order_by(deployment_history.c.id)
                )
                .scalars()
                .all()
            )
        engine.dispose()
        assert stored == [_with_agent(e) for e in MIGRATED]  # the rows themselves, rewritten
        page = events(app)
        assert [{"type": e["type"], "payload": e["payload"]} for e in page["events"]] == stored
        assert [payload_errors(e) for e in page["events"]] == [[]] * 5

        refused = transition(app, version="1.0.0", transition="promote", toState="active")
        assert (refused.status_code, refused.json()["error"]) == (422, "eval_gate_unmet")
        passing = app.run_to_end(REFUNDS_SUITE, CAREFUL)
        promoted = transition(
            app, version="1.0.0", transition="promote", toState="active", evalRunId=passing
        )
        assert promoted.status_code == 200, promoted.text
        assert promoted.json()["rollbackPointer"] == "0.8.0"
        assert transition(app, version="1.0.0", transition="rollback").status_code == 200
        page = events(app)
        assert [payload_errors(e) for e in page["events"]] == [[]] * 7
        new = {"agentId": CAREFUL, "toVersion": "1.0.0", "toState": "active"}
        restored = {"agentId": CAREFUL, "fromVersion": "1.0.0", "toVersion": "0.8.0"}
        assert [e["payload"] for e in page["events"][5:]] == [
            new | {"fromVersion": "0.8.0", "channel": "stable", "evalRunId": passing},
            restored | {"rollbackPointer": "0.8.0"},
        ]
        assert len(events(app, key="globex-key")["events"]) == 1
    finally:
        app.close()


def test_an_old_shape_row_in_a_migrated_store_reads_as_defined(fresh_app: AppHost) -> None:
    """A row written in the old shape after the migration (a replica not yet upgraded, a
    restored backup) is read, by the store and the route, in the protocol's shape."""
    store = fresh_app.app.state.host.host_store
    with store.store.transaction() as tx:
        for tenant, kind, payload in OLD_HISTORY[:5]:
            event = {"type": kind, "payload": {"agentId": CAREFUL, **payload}}
            row = {"tenant": tenant, "agent_id": CAREFUL, "event": event, "created_at": "t"}
            tx.execute(deployment_history.insert().values(**row))
    assert store.history("acme", CAREFUL) == [_with_agent(e) for e in MIGRATED]
    page = events(fresh_app)
    assert [payload_errors(e) for e in page["events"]] == [[]] * 5
