"""Strict mode (`--require-behavior`), blocked legs, and signed evidence from our own run.

Strict mode turns what would be inapplicable or blocked into executed-fail; no mode lets a
leg pass with zero assertions. The evidence a run writes is checked here field by field
against the bundle v3 rules (digests recomputed, the signature verified with the key)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from openwop_eval.cli.main import main
from openwop_eval.conformance import digests, signing, witness
from openwop_eval.conformance.harness import LEGS, Harness, judged
from tests.asgi import client
from tests.conformance.doubles import double_app, recorded_runs, serving
from tests.hosts import Host, _free_port

SQLITE = pytest.mark.parametrize("database", ["sqlite"], indirect=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return recorded_runs(tmp_path_factory.mktemp("runs"))


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    private, _, _ = signing.generate()
    path = tmp_path / "host-key.pem"
    path.write_bytes(private)
    return path


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, ["conformance", *args], env=env)


def report_of(path: Path) -> dict[str, str]:
    return {leg["leg"]: leg["result"] for leg in json.loads(path.read_text())["legs"]}


def test_without_the_capability_strict_mode_fails_all_three_legs(
    runs: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    with serving(double_app(runs, eval_suite=False), _free_port()) as url:
        lax = invoke(url, "--json", str(out))
        assert lax.exit_code == 0, lax.output
        assert set(report_of(out).values()) == {"inapplicable"}
        strict = invoke(url, "--require-behavior", "--json", str(out))
        assert strict.exit_code == 1, strict.output
        assert report_of(out) == dict.fromkeys(LEGS, "executed-fail")
        by_env = invoke(url, "--json", str(out), env={"OPENWOP_REQUIRE_BEHAVIOR": "true"})
    assert by_env.exit_code == 1
    legs = json.loads(out.read_text())["legs"]
    assert all(leg["result"] == "executed-fail" for leg in legs)
    assert all("agents.evalSuite" in leg["reason"] for leg in legs)
    assert all(len(leg["assertions"]) == 1 for leg in legs)  # the failed observation


@SQLITE
def test_strict_mode_against_our_host_passes_with_assertions(host: Host, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = invoke(host.url, "--api-key", "acme-key", "--require-behavior", "--json", str(out))
    assert result.exit_code == 0, result.output
    legs = json.loads(out.read_text())["legs"]
    assert [leg["result"] for leg in legs] == ["executed-pass"] * 3
    assert all(len(leg["assertions"]) > 0 for leg in legs)
    assert "require-behavior" in result.output


@SQLITE
def test_a_refused_credential_blocks_the_host_legs(host: Host, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = invoke(host.url, "--api-key", "not-a-key", "--json", str(out))
    assert result.exit_code == 0, result.output  # blocked is not a failure of the host
    got = report_of(out)
    assert got[witness.MEAN_GATED] == got[witness.SUITE_GATED] == "blocked"
    assert got[witness.GATED_FIELDS_SHAPE] == "executed-pass"  # server-free: the probe ran
    strict = invoke(host.url, "--api-key", "not-a-key", "--require-behavior", "--json", str(out))
    assert strict.exit_code == 1
    assert report_of(out)[witness.SUITE_GATED] == "executed-fail"
    assert "refused the API key" in json.loads(out.read_text())["legs"][1]["reason"]


def test_a_pass_needs_an_assertion() -> None:
    assert judged(witness.SUITE_GATED, []).result == "executed-fail"
    assert judged(witness.SUITE_GATED, []).detail == "no assertion ran"


def test_the_in_process_double_passes_strictly(runs: dict[str, Any]) -> None:
    harness = Harness("http://double", "dev-key", client=client(double_app(runs)))
    harness.strict = True
    try:
        result = harness.run()
    finally:
        harness.close()
    assert [leg.result for leg in result.legs] == ["executed-pass"] * 3


@SQLITE
def test_evidence_of_our_host_is_a_signed_bundle(
    host: Host, tmp_path: Path, key_file: Path
) -> None:
    evidence = tmp_path / "e.json"
    result = invoke(
        host.url,
        "--api-key",
        "acme-key",
        "--require-behavior",
        "--evidence",
        str(evidence),
        "--signing-key",
        str(key_file),
        "--signing-key-id",
        "test-host-1",
        "--host-build",
        "commit:0123abcd",
    )
    assert result.exit_code == 0, result.output
    bundle = json.loads(evidence.read_text())
    rows = bundle["results"]["requirements"]
    assert [(r["id"], r["result"]) for r in rows] == [(leg, "executed-pass") for leg in LEGS]
    assert all(r["assertions"] > 0 and "detail" not in r for r in rows)
    assert bundle["results"]["totals"] == {
        "executedPass": 3,
        "executedFail": 0,
        "skipped": 0,
        "inapplicable": 0,
        "blocked": 0,
    }
    assert bundle["assertionCount"] == sum(r["assertions"] for r in rows)
    assert bundle["suite"]["name"] == "openwop-eval"  # never the OpenWOP suite's name
    assert bundle["claimedProfiles"] == []
    assert bundle["host"]["build"] == {"kind": "commit", "id": "0123abcd"}
    assert bundle["host"]["signingKeyId"] == bundle["signature"]["keyId"] == "test-host-1"
    document = bundle["discovery"]["document"]
    assert bundle["discovery"]["sha256"] == digests.discovery_digest(document)
    assert bundle["discovery"]["url"] == host.url + "/.well-known/openwop"
    assert bundle["witnessSha256"] == digests.witness_digest(rows)
    assert bundle["signature"]["over"] == list(digests.SIGNATURE_OVER)
    signed = digests.attestation_bytes(
        bundle["witnessSha256"],
        bundle["host"]["build"],
        bundle["suite"]["version"],
        bundle["discovery"]["sha256"],
    )
    public = signing.private_key_from_pem(key_file.read_bytes()).public_key()
    assert signing.verifies(public, signed, bundle["signature"]["sig"])
    assert not any(p.name.endswith(".partial") for p in tmp_path.iterdir())


def test_evidence_of_a_failing_host_carries_every_detail(
    runs: dict[str, Any], tmp_path: Path, key_file: Path
) -> None:
    evidence = tmp_path / "e.json"
    with serving(double_app(runs, eval_suite=False), _free_port()) as url:
        result = invoke(
            url,
            "--require-behavior",
            "--evidence",
            str(evidence),
            "--signing-key",
            str(key_file),
            "--signing-key-id",
            "k",
            "--host-build",
            "artifact-sha256:" + "ab" * 32,
        )
    assert result.exit_code == 1, result.output
    bundle = json.loads(evidence.read_text())
    assert bundle["results"]["totals"]["executedFail"] == 3
    assert all(r["detail"] for r in bundle["results"]["requirements"])
    assert [n["id"] for n in bundle["detail"]["nonPass"]] == list(LEGS)
    assert all("(require-behavior)" in r["scenario"] for r in bundle["results"]["requirements"])


def test_nothing_exercised_is_not_signed(
    runs: dict[str, Any], tmp_path: Path, key_file: Path
) -> None:
    evidence = tmp_path / "e.json"
    with serving(double_app(runs, eval_suite=False), _free_port()) as url:
        result = invoke(
            url, "--evidence", str(evidence), "--signing-key", str(key_file),
            "--signing-key-id", "k", "--host-build", "commit:abc",
        )  # fmt: skip
    assert result.exit_code == 2
    assert "no leg ran an assertion" in result.output
    assert not evidence.exists()


def _rsa_pem() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--signing-key-id", "k", "--host-build", "commit:abc"], "--signing-key"),
        (["--signing-key", "KEY", "--host-build", "commit:abc"], "--signing-key-id"),
        (["--signing-key", "KEY", "--signing-key-id", "k"], "--host-build"),
        (["--signing-key", "KEY", "--signing-key-id", "k", "--host-build", "tag:v1"], "KIND:ID"),
        (["--signing-key", "KEY", "--signing-key-id", "a b", "--host-build", "commit:x"], "1 to"),
        (["--signing-key", "/nonexistent.pem", "--signing-key-id", "k", "--host-build", "commit:x"],
         "No such file"),
        (["--signing-key", "RSA", "--signing-key-id", "k", "--host-build", "commit:x"],
         "not Ed25519"),
    ],
)  # fmt: skip
def test_evidence_options_are_checked_before_the_host_is_contacted(
    tmp_path: Path, key_file: Path, args: list[str], says: str
) -> None:
    rsa_file = tmp_path / "rsa.pem"
    rsa_file.write_bytes(_rsa_pem())
    args = [str(key_file) if a == "KEY" else str(rsa_file) if a == "RSA" else a for a in args]
    unreachable = f"http://127.0.0.1:{_free_port()}"
    result = invoke(unreachable, "--evidence", str(tmp_path / "e.json"), *args)
    assert result.exit_code == 2, result.output  # not 3: the host was never asked
    assert says in result.output
    assert "PRIVATE KEY" not in result.output


def test_the_signing_key_may_come_from_the_environment(
    runs: dict[str, Any], tmp_path: Path, key_file: Path
) -> None:
    evidence = tmp_path / "e.json"
    env = {
        "OPENWOP_BUNDLE_SIGNING_KEY": key_file.read_text(),
        "OPENWOP_BUNDLE_SIGNING_KEY_ID": "env-key",
        "OPENWOP_HOST_BUILD": "commit:abc",
    }
    with serving(double_app(runs), _free_port()) as url:
        result = invoke(url, "--evidence", str(evidence), env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(evidence.read_text())["signature"]["keyId"] == "env-key"
    assert "PRIVATE KEY" not in result.output
