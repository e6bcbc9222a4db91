"""Deployments under concurrency and crashes: concurrent changes of one agent's deployments
serialize (one lands, the others are told so with a 409, never a 500), at most one version
is active on a channel, one history entry is written per change that landed, and an
idempotency key survives the death of the request that claimed it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from openwop_eval.protocol.ids import project
from openwop_eval.server.config import DeploymentPolicy
from openwop_eval.store import Store, StoreError
from openwop_eval.store.host import HostStore
from openwop_eval.store.schema import idempotency
from tests.server.inprocess import CAREFUL, REFUNDS_SUITE, AppHost

DEPLOYMENTS = f"/agents/{CAREFUL}/deployments"
UNGATED = DeploymentPolicy(required_eval=False)


def promotions(versions: list[str], **extra: Any) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (
            "POST",
            DEPLOYMENTS,
            {"json": {"version": v, "transition": "promote", "toState": "active", **extra}},
        )
        for v in versions
    ]


def check_consistent(app: AppHost, answers: list[Any]) -> None:
    """No 5xx; one history entry per change that landed; at most one active version."""
    codes = [a.status_code for a in answers]
    assert all(c in (200, 400, 409) for c in codes), [a.text for a in answers]
    for answer in answers:
        if answer.status_code == 409:
            assert answer.json()["error"] == "deployment_conflict"
    state = app.app.state.host
    listed = app.request("GET", DEPLOYMENTS).json()
    assert sum(d["state"] == "active" for d in listed) == 1, listed
    assert len(state.host_store.history("acme", CAREFUL)) == codes.count(200)


def test_ten_versions_promoted_at_once_leave_one_active(make_app: Callable[..., AppHost]) -> None:
    app = make_app(deployment=UNGATED)
    landed = 0
    for round_ in range(3):  # the first changes (no revision yet), then later ones
        answers = app.at_once(promotions([f"{round_}.{n}.0" for n in range(10)]))
        codes = [a.status_code for a in answers]
        assert set(codes) <= {200, 409}, [a.text for a in answers]
        assert 200 in codes
        landed += codes.count(200)
    listed = app.request("GET", DEPLOYMENTS).json()
    assert sum(d["state"] == "active" for d in listed) == 1
    history = app.app.state.host.host_store.history("acme", CAREFUL)
    assert len(history) == landed  # one entry per change that landed, none for the 409s
    active = next(d for d in listed if d["state"] == "active")
    assert history[-1]["payload"]["toVersion"] == active["version"]


def test_one_version_promoted_ten_times_at_once_is_promoted_once(
    make_app: Callable[..., AppHost],
) -> None:
    app = make_app(deployment=UNGATED)
    answers = app.at_once(promotions(["1.0.0"] * 10))
    assert [a.status_code for a in answers].count(200) == 1
    check_consistent(app, answers)


def test_the_gated_promotion_of_one_run_races_to_one_change(
    make_app: Callable[..., AppHost],
) -> None:
    app = make_app()
    run_id = app.run_to_end(REFUNDS_SUITE, CAREFUL)
    answers = app.at_once(promotions(["1.0.0"] * 10, evalRunId=run_id))
    assert [a.status_code for a in answers].count(200) == 1
    check_consistent(app, answers)


def test_the_database_refuses_a_second_active_version_on_a_channel(
    make_app: Callable[..., AppHost],
) -> None:
    app = make_app(deployment=UNGATED)
    assert app.request("POST", DEPLOYMENTS, json=promotions(["1.0.0"])[0][2]["json"]).is_success
    with pytest.raises(StoreError), app.store.transaction() as tx:
        tx.execute(
            sa.text(
                "INSERT INTO deployments (tenant, agent_id, version, state, channels,"
                " updated_at, active_channel) VALUES ('acme', :agent, '2.0.0', 'active',"
                " '[\"stable\"]', 'x', 'stable')"
            ),
            {"agent": CAREFUL},
        )


def _claim_left_by_a_crash(database: str, operation: str, key: str, age_s: int = 0) -> None:
    """The row a request killed between its claim and its answer leaves behind."""
    made = datetime.now(UTC) - timedelta(seconds=age_s)
    store = Store(database)
    try:
        with store.transaction() as tx:
            tx.execute(
                idempotency.insert().values(
                    tenant="acme",
                    operation=operation,
                    key=key,
                    request_hash="0" * 64,
                    created_at=made.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                )
            )
    finally:
        store.close()


def test_a_claim_left_by_a_killed_host_does_not_block_its_key_forever(
    make_app: Callable[..., AppHost], database: str
) -> None:
    """A SIGKILL while a request with an Idempotency-Key is in flight leaves its claim
    unsettled: the only host of a SQLite store releases such claims when it starts, and on
    PostgreSQL (replicas) a claim older than its time to live is taken over."""
    app = make_app()
    app.close()
    body = {"mode": "eval", "evalSuiteRef": REFUNDS_SUITE, "agentId": CAREFUL}
    age = 0 if database.startswith("sqlite") else 3600
    _claim_left_by_a_crash(database, "runs.create", "retry-1", age)
    app = make_app()
    retried = app.request("POST", "/runs", json=body, headers={"Idempotency-Key": "retry-1"})
    assert retried.status_code == 201, retried.text


def test_a_fresh_claim_of_another_replica_is_still_in_flight(
    make_app: Callable[..., AppHost], database: str
) -> None:
    if database.startswith("sqlite"):
        pytest.skip("one host per SQLite store: a claim it did not make is a dead one's")
    app = make_app()
    _claim_left_by_a_crash(database, "runs.create", "busy-1")
    body = {"mode": "eval", "evalSuiteRef": REFUNDS_SUITE, "agentId": CAREFUL}
    answer = app.request("POST", "/runs", json=body, headers={"Idempotency-Key": "busy-1"})
    assert answer.status_code == 409
    assert answer.json()["error"] == "idempotency_key_mismatch"  # another body's claim


@pytest.mark.parametrize("route", ["runs", "deployments"])
def test_the_answer_is_kept_with_the_effect_even_if_settling_after_fails(
    make_app: Callable[..., AppHost], monkeypatch: pytest.MonkeyPatch, route: str
) -> None:
    """The key is settled in the transaction that makes the run or records the change: a
    store that fails just after (or a kill there) leaves a retry its replay, not a second
    run or a second change."""
    app = make_app()
    run_id = app.run_to_end(REFUNDS_SUITE, CAREFUL)

    def fail(*_args: Any) -> None:
        raise StoreError("the store went away")

    monkeypatch.setattr(HostStore, "settle", fail)
    if route == "runs":
        path, body = "/runs", {"mode": "eval", "evalSuiteRef": REFUNDS_SUITE, "agentId": CAREFUL}
    else:
        path = DEPLOYMENTS
        body = {"version": "1.0.0", "transition": "promote", "toState": "active"}
        body["evalRunId"] = run_id
    headers = {"Idempotency-Key": f"once-{route}"}
    first = app.request("POST", path, json=body, headers=headers, strict=False)
    assert first.status_code == 500  # the answer was lost on the way
    monkeypatch.undo()
    retry = app.request("POST", path, json=body, headers=headers)
    assert retry.status_code in (200, 201), retry.text
    assert retry.headers["OpenWOP-Idempotent-Replay"] == "true"
    if route == "runs":
        app.follow(retry.json()["runId"])
        listed = app.request("GET", "/runs").json()["runs"]
        assert len(listed) == 2  # the eval run above, and the one this key created
        assert app.request("GET", f"/runs/{project(retry.json()['runId'])}").is_success
    else:
        assert len(app.app.state.host.host_store.history("acme", CAREFUL)) == 1
