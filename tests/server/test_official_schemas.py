"""What the host serves, against the protocol's own schemas (tests/server/data/): every
deployment event the state machine can produce is its RFC 0082 definition, closed as it
is; and the discovery document is a v2 capabilities document, with or without signing keys,
but for the evalSuite facets that later RFCs added."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from openwop_eval.conformance.signing import generate
from openwop_eval.protocol.deployments import RULES, Deployment, Transition, plan
from openwop_eval.server.signing_config import RetiredKey, SigningConfig, read_keys
from tests.server.inprocess import AppHost, host_config
from tests.server.official import (
    CAPABILITIES,
    DATA,
    discovery_errors,
    event_types,
    payload_errors,
)

AGENT = "acme.support-resolver"
RUN = "acme/" + "e" * 24

NEWER_EVAL_SUITE_FACETS = {"trajectory", "trials", "recordedFixtures", "baselineSelection"}
"""``agents.evalSuite`` facets of RFC 0244 (trajectory, trials), RFC 0251 (baselineSelection)
and RFC 0252 (recordedFixtures), later than the capabilities schema shipped as test data."""


def _record(version: str, state: str, **extra: Any) -> Deployment:
    return Deployment("acme", AGENT, version, state, ["stable"], **extra)


def _every_transition() -> list[Any]:
    """Every (state, transition, target) the rules allow, as a planned change, with an
    active version on the channel (so a promotion to active replaces it) and a rollback
    pointer (so a rollback restores it)."""
    cases: list[Any] = []
    for (state, transition), targets in RULES.items():
        for target in targets:
            records = [_record("0.9.0", "active"), _record("1.0.0", state, eval_run_id=RUN)]
            if state == "active":
                records = [
                    _record("0.9.0", "deprecated"),
                    _record("1.0.0", "active", eval_run_id=RUN, rollback_pointer="0.9.0"),
                ]
            step = Transition("1.0.0", transition, target, "stable", RUN)
            cases.append(pytest.param(records, step, id=f"{state}-{transition}-{target}"))
    return cases


def test_the_capabilities_schema_is_the_whole_official_file_unchanged() -> None:
    """The file at the commit README.md names, byte for byte: its length and SHA-256."""
    raw = (DATA / CAPABILITIES).read_bytes()
    assert len(raw.decode("utf-8")) == 339_854
    assert hashlib.sha256(raw).hexdigest() == (
        "8d151a098a3cf7285fcadec8c1f192bed963ed6da3146e62d25155eb18afba9a"
    )


def test_the_shipped_definitions_are_the_four_deployment_events() -> None:
    assert event_types() == {
        "deployment.promoted": "deploymentPromoted",
        "deployment.rolled-back": "deploymentRolledBack",
        "deployment.canary-adjusted": "deploymentCanaryAdjusted",
        "deployment.state-changed": "deploymentStateChanged",
    }


@pytest.mark.parametrize(("records", "step"), _every_transition())
def test_every_planned_event_is_its_definition(records: list[Deployment], step: Transition) -> None:
    event = plan(records, step, "acme", AGENT).event
    assert payload_errors(event) == []


def test_a_first_promotion_names_no_earlier_version() -> None:
    event = plan([], Transition("1.0.0", "promote", "active", "stable", RUN), "acme", AGENT).event
    assert event == {
        "type": "deployment.promoted",
        "payload": {
            "agentId": AGENT,
            "toVersion": "1.0.0",
            "toState": "active",
            "channel": "stable",
            "evalRunId": RUN,
        },
    }
    assert payload_errors(event) == []


def test_the_definitions_refuse_what_the_old_payloads_carried() -> None:
    """The shapes written before revision 0007 are not the protocol's: the check can fail."""
    old_promoted = {"agentId": AGENT, "toVersion": "1", "toState": "test", "fromState": "draft"}
    old_changed = {"agentId": AGENT, "toVersion": "1", "toState": "paused", "fromState": "active"}
    assert payload_errors({"type": "deployment.promoted", "payload": old_promoted}) == [
        "(payload): Additional properties are not allowed ('fromState' was unexpected)"
    ]
    changed = payload_errors({"type": "deployment.state-changed", "payload": old_changed})
    assert "(payload): 'version' is a required property" in changed
    assert payload_errors({"type": "deployment.moved", "payload": {}}) != []


def _discovery(tmp_path: Path, signing: SigningConfig | None = None) -> dict[str, Any]:
    config = host_config(f"sqlite:///{tmp_path / 'host.sqlite'}")
    if signing is not None:
        config = config.model_copy(update={"signing": signing})
    host = AppHost(config.database, config)
    try:
        response = host.request("GET", "/.well-known/openwop", key=None)
        assert response.status_code == 200
        document: dict[str, Any] = response.json()
        return document
    finally:
        host.close()


def _known_differences(document: dict[str, Any]) -> tuple[set[str], dict[str, Any]]:
    """The newer evalSuite facets ``document`` advertises, and the document without them."""
    eval_suite = dict(document["agents"]["evalSuite"])
    newer = {k for k in eval_suite if k in NEWER_EVAL_SUITE_FACETS}
    bare = {k: v for k, v in eval_suite.items() if k not in newer}
    return newer, {**document, "agents": {**document["agents"], "evalSuite": bare}}


def _signing(tmp_path: Path) -> SigningConfig:
    private, _, _ = generate()
    _, _, retired_raw = generate()
    (tmp_path / "host.pem").write_bytes(private)
    (tmp_path / "host.pem").chmod(0o600)
    retired = RetiredKey(
        key_id="acme-host-2025", public_key=retired_raw, retired_at="2026-06-01T00:00:00Z"
    )
    config = SigningConfig(key_id="acme-host-2026", key_file="host.pem", retired=(retired,))
    return read_keys(config, tmp_path)


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signing-keys"])
def test_discovery_is_a_v2_capabilities_document(tmp_path: Path, signed: bool) -> None:
    document = _discovery(tmp_path, _signing(tmp_path) if signed else None)
    assert ("signingKeys" in document) is signed
    newer, bare = _known_differences(document)
    assert newer == NEWER_EVAL_SUITE_FACETS
    assert [e.message for e in discovery_errors(bare)] == []
    # as served, the newer facets are the one difference, each named where it is
    errors = discovery_errors(document)
    assert len(errors) == 1
    assert list(errors[0].absolute_path) == ["agents", "evalSuite"]
    assert errors[0].validator == "additionalProperties"
    assert all(repr(facet) in errors[0].message for facet in NEWER_EVAL_SUITE_FACETS)


def test_the_capabilities_check_can_fail(tmp_path: Path) -> None:
    _, bare = _known_differences(_discovery(tmp_path))
    broken = {
        **bare,
        "agents": {**bare["agents"], "deployment": {"states": ["live"]}},
        "runList": {**bare["runList"], "until": "2099-01-01"},  # stable has no end
        "x-extra": True,
    }
    paths = sorted("/".join(map(str, e.absolute_path)) for e in discovery_errors(broken))
    assert paths == ["", "agents/deployment/states/0", "runList"]
