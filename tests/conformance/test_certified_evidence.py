"""The whole certified-evidence path against a real `serve` process that publishes its key:
strict conformance run → signed evidence → `conformance verify --discovery` of the live host;
every tampering of that evidence is rejected with its named reason; a live re-run agrees."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from openwop_eval.cli.main import main
from openwop_eval.conformance import signing
from openwop_eval.conformance.harness import LEGS
from tests.hosts import Host, _free_port, write_config

KEY_ID = "test-host-2026"


@pytest.fixture(scope="module")
def signed_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Host, Path]]:
    tmp = tmp_path_factory.mktemp("signed-host")
    config = write_config(tmp)
    private, _, _ = signing.generate()
    key = tmp / "host.pem"
    key.write_bytes(private)
    key.chmod(0o600)
    with config.open("a") as handle:
        handle.write(f'\n[signing]\nkey_id = "{KEY_ID}"\nkey_file = "{key}"\n')
    gate = tmp / "gate"
    gate.mkdir()
    host = Host(config, f"sqlite:///{tmp / 'host.sqlite'}", gate).start()
    try:
        yield host, key
    finally:
        host.stop()


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, ["conformance", *args])


def evidence_of(host: Host, key: Path, out: Path, api_key: str = "acme-key") -> Result:
    return cli(
        host.url,
        "--api-key",
        api_key,
        "--require-behavior",
        "--evidence",
        str(out),
        "--signing-key",
        str(key),
        "--signing-key-id",
        KEY_ID,
        "--host-build",
        "commit:5aa8686ecdfb042ad47dc9d6150bdab1f0fae4b9",
    )


@pytest.fixture(scope="module")
def evidence(
    signed_host: tuple[Host, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    host, key = signed_host
    out = tmp_path_factory.mktemp("evidence") / "e.json"
    made = evidence_of(host, key, out)
    assert made.exit_code == 0, made.output
    return dict(json.loads(out.read_text()))


def verify(path: Path, *args: str) -> tuple[Result, dict[str, Any]]:
    report = path.with_suffix(".verified.json")
    result = cli("verify", str(path), "--json", str(report), *args)
    return result, json.loads(report.read_text()) if report.exists() else {}


def test_our_strict_evidence_verifies_against_the_live_discovery(
    signed_host: tuple[Host, Path], evidence: dict[str, Any], tmp_path: Path
) -> None:
    host, _ = signed_host
    path = tmp_path / "e.json"
    path.write_text(json.dumps(evidence))
    result, report = verify(path, "--discovery", host.url)
    assert result.exit_code == 0, result.output
    assert report["verdict"] == "verified"
    assert report["keySource"] == "discovery"
    assert report["signatureVerified"] is True
    claims = {c["id"]: (c["result"], c["assertions"]) for c in report["rfc0246"]}
    assert set(claims) == set(LEGS)
    assert all(result == "executed-pass" and n > 0 for result, n in claims.values())
    shown = CliRunner().invoke(main, ["conformance", "verify", str(path), "--discovery", host.url])
    assert "RFC 0246 claims" in shown.output
    assert shown.output.count("executed-pass") == 3


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(bundle: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = bundle
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[int(last) if last.isdigit() else last] = value

    return apply


def _flip_sig(bundle: dict[str, Any]) -> None:
    sig = bundle["signature"]["sig"]
    bundle["signature"]["sig"] = ("B" if sig[0] == "A" else "A") + sig[1:]


def _retitle_discovery(bundle: dict[str, Any]) -> None:
    bundle["discovery"]["document"]["implementation"]["name"] = "someone-else"


TAMPERING: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("a row's result", _set("results.requirements.1.result", "inapplicable"), "witness-digest"),
    ("an assertion count", _set("results.requirements.0.assertions", 1), "witness-digest"),
    ("a total", _set("results.totals.executedPass", 2), "totals-mismatch"),
    ("the assertion count", _set("assertionCount", 1), "assertion-count"),
    ("the discovery document", _retitle_discovery, "discovery-digest"),
    ("the discovery digest", _set("discovery.sha256", "0" * 64), "signature-invalid"),
    ("the witness digest", _set("witnessSha256", "f" * 64), "witness-digest"),
    ("the build", _set("host.build.id", "0" * 40), "signature-invalid"),
    ("the suite version", _set("suite.version", "9.9.9"), "signature-invalid"),
    ("the key id", _set("signature.keyId", "not-published"), "key-not-published"),
    ("the over list", _set("signature.over", ["witnessSha256"]), "signature-over"),
    ("the signature", _flip_sig, "signature-invalid"),
]


@pytest.mark.parametrize(
    ("what", "tamper", "reason"), TAMPERING, ids=[case[0] for case in TAMPERING]
)
def test_each_tampering_is_rejected_with_its_reason(
    signed_host: tuple[Host, Path],
    evidence: dict[str, Any],
    tmp_path: Path,
    what: str,
    tamper: Callable[[dict[str, Any]], None],
    reason: str,
) -> None:
    host, _ = signed_host
    bundle = copy.deepcopy(evidence)
    tamper(bundle)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(bundle))
    result, report = verify(path, "--discovery", host.url)
    assert result.exit_code == 1, (what, result.output)
    assert reason in {r["name"] for r in report["rejections"]}, report["rejections"]
    assert reason in result.output


def test_evidence_of_a_failing_run_verifies_and_its_details_are_signed(
    signed_host: tuple[Host, Path], tmp_path: Path
) -> None:
    """Refused credentials in strict mode: honest evidence of failure, which verifies; drop
    one of its details and it no longer does."""
    host, key = signed_host
    out = tmp_path / "fail.json"
    made = evidence_of(host, key, out, api_key="not-a-key")
    assert made.exit_code == 1, made.output
    bundle = json.loads(out.read_text())
    assert bundle["results"]["totals"]["executedFail"] == 2  # the host legs; shape ran
    result, _ = verify(out, "--discovery", host.url)
    assert result.exit_code == 0, result.output
    failing = next(r for r in bundle["results"]["requirements"] if "detail" in r)
    del failing["detail"]
    out.write_text(json.dumps(bundle))
    result, report = verify(out, "--discovery", host.url)
    assert result.exit_code == 1
    assert "reason-missing" in {r["name"] for r in report["rejections"]}


def test_the_live_discovery_is_kept_apart_from_a_pem(
    signed_host: tuple[Host, Path], evidence: dict[str, Any], tmp_path: Path
) -> None:
    _, key = signed_host
    path = tmp_path / "e.json"
    path.write_text(json.dumps(evidence))
    public = tmp_path / "host.pub.pem"
    _, other, _ = signing.generate()
    public.write_bytes(other)
    with_pem, _ = verify(path, "--host-key", str(key))
    assert with_pem.exit_code == 0, with_pem.output  # a private PEM gives its public half
    wrong_pem, report = verify(path, "--host-key", str(public))
    assert wrong_pem.exit_code == 1
    assert "signature-invalid" in {r["name"] for r in report["rejections"]}
    down, report = verify(path, "--discovery", f"http://127.0.0.1:{_free_port()}")
    assert down.exit_code == 2  # discovery not read: integrity only
    offline, _ = verify(path)
    assert offline.exit_code == 2


def test_a_live_rerun_agrees_with_the_signed_rows(
    signed_host: tuple[Host, Path], evidence: dict[str, Any], tmp_path: Path
) -> None:
    host, _ = signed_host
    path = tmp_path / "e.json"
    path.write_text(json.dumps(evidence))
    result, report = verify(path, "--discovery", host.url, "--rerun", "--api-key", "acme-key")
    assert result.exit_code == 0, result.output
    assert [(r["signed"], r["live"]) for r in report["rerun"]["rows"]] == [
        ("executed-pass", "executed-pass")
    ] * 3
    refused, report = verify(
        path, "--discovery", host.url, "--rerun", "--api-key", "not-a-key", "--require-behavior"
    )
    assert refused.exit_code == 1  # the live host no longer shows what was signed
    assert "rerun-disagrees" in {r["name"] for r in report["rejections"]}
