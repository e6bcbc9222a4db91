"""``conformance verify``: exit codes 0/1/2/3, live keys from a loopback host, inert output.

Duplicate member names exit 1, not 3: the file *is* JSON (3 is for a file that is missing,
unreadable, too large or not JSON), but it is not I-JSON, and the digest puts the I-JSON
parse under the verifier's first check — a bundle two readers could read two ways is
refused (``non-ijson``), as the reference verifiers refuse it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from openwop_eval.cli.conformance_verify import verify
from tests.conformance.bundles import (
    KEY_ID,
    OTHER_RAW,
    PRIVATE,
    PUBLIC_PEM,
    PUBLIC_RAW,
    bundle,
    seal,
)
from tests.hosts import _free_port

REFERENCE = Path(__file__).parent.parent / "fixtures" / "bundles" / "openwop-host-v2-reference.json"


class Discovery:
    """A loopback host serving one discovery document (or a redirect), recording requests."""

    def __init__(self) -> None:
        self.document: Any = {}
        self.redirect: str | None = None
        self.requests: list[dict[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.requests.append({"path": self.path, **dict(self.headers.items())})
                if owner.redirect:
                    self.send_response(302)
                    self.send_header("Location", owner.redirect)
                    self.end_headers()
                    return
                body = json.dumps(owner.document).encode()
                self.send_response(200 if self.path == "/.well-known/openwop" else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def publish(self, *keys: tuple[str, str]) -> None:
        self.document = {
            "protocolVersions": ["2.0"],
            "signingKeys": [{"keyId": k, "alg": "ed25519", "publicKey": raw} for k, raw in keys],
        }


@pytest.fixture
def host() -> Iterator[Discovery]:
    served = Discovery()
    thread = threading.Thread(target=served.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        served.server.shutdown()
        served.server.server_close()
        thread.join()


def write(tmp: Path, value: Any, name: str = "bundle.json") -> Path:
    path = tmp / name
    path.write_text(value if isinstance(value, str) else json.dumps(value, indent=2))
    return path


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(verify, [str(a) for a in args])


@pytest.fixture
def pem(tmp_path: Path) -> Path:
    path = tmp_path / "host.pub.pem"
    path.write_bytes(PUBLIC_PEM)
    return path


def test_verified_with_a_host_key(tmp_path: Path, pem: Path) -> None:
    result = run(write(tmp_path, bundle()), "--host-key", pem)
    assert result.exit_code == 0, result.output
    assert "verified" in result.output
    assert "from PEM" in result.output
    assert "openwop-discovery-core, openwop-core-standard" in result.output
    assert "RFC 0246 claims" in result.output
    assert "openwop.requirement.0246.mean-gated" in result.output


def test_a_private_key_pem_gives_its_public_half(tmp_path: Path) -> None:
    key = tmp_path / "host.pem"
    key.write_bytes(PRIVATE)
    assert run(write(tmp_path, bundle()), "--host-key", key).exit_code == 0


def test_no_key_is_coherent_but_unverified(tmp_path: Path) -> None:
    result = run(write(tmp_path, bundle()))
    assert result.exit_code == 2, result.output
    assert "not checked" in result.output


@pytest.mark.parametrize(
    "content", [None, "{not json", "", '{"a": 1} {"b": 2}', "[NaN]", "directory"]
)
def test_missing_or_not_json_exits_3(tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "bundle.json"
    if content == "directory":
        path.mkdir()
    elif content is not None:
        path.write_text(content)
    result = run(path, "--json", tmp_path / "out.json")
    assert result.exit_code == 3, result.output
    assert json.loads((tmp_path / "out.json").read_text())["verdict"] == "unreadable"


def test_duplicate_member_names_are_refused(tmp_path: Path, pem: Path) -> None:
    text = json.dumps(bundle(), indent=2).replace(
        '"bundleVersion": "3",', '"bundleVersion": "3",\n  "bundleVersion": "3",'
    )
    result = run(write(tmp_path, text), "--host-key", pem)
    assert result.exit_code == 1, result.output
    assert "non-ijson" in result.output
    assert "appears twice" in result.output


def test_an_unusable_key_file_exits_3(tmp_path: Path) -> None:
    bad = write(tmp_path, "not a pem", "key.pem")
    assert run(write(tmp_path, bundle()), "--host-key", bad).exit_code == 3
    assert run(write(tmp_path, bundle()), "--host-key", tmp_path / "absent.pem").exit_code == 3


def test_live_discovery_publishing_the_key(tmp_path: Path, host: Discovery) -> None:
    host.publish(("older-key", OTHER_RAW), (KEY_ID, PUBLIC_RAW))
    out = tmp_path / "result.json"
    result = run(write(tmp_path, bundle()), "--discovery", host.url, "--json", out)
    assert result.exit_code == 0, result.output
    assert f"from live discovery {host.url}/.well-known/openwop" in result.output
    data = json.loads(out.read_text())
    assert data["keySource"] == "discovery"
    assert data["discovery"]["read"] is True
    (request,) = host.requests
    assert request["path"] == "/.well-known/openwop"
    assert request["Accept"] == "application/json"
    assert request["OpenWOP-Version"] == "2.0"
    assert "Authorization" not in request


def test_live_discovery_publishing_another_key(tmp_path: Path, host: Discovery) -> None:
    host.publish(("someone-else", OTHER_RAW))
    url = host.url + "/.well-known/openwop"
    result = run(write(tmp_path, bundle()), "--discovery", url)
    assert result.exit_code == 1, result.output
    assert "key-not-published" in result.output


def test_live_discovery_with_the_wrong_key_under_the_id(tmp_path: Path, host: Discovery) -> None:
    host.publish((KEY_ID, OTHER_RAW))
    result = run(write(tmp_path, bundle()), "--discovery", host.url)
    assert result.exit_code == 1
    assert "signature-invalid" in result.output


def test_live_discovery_down_is_integrity_only(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    result = run(write(tmp_path, bundle()), "--discovery", url, "--timeout", "5")
    assert result.exit_code == 2, result.output
    assert "live discovery not read" in result.output


def test_a_redirect_to_another_origin_is_not_followed(tmp_path: Path, host: Discovery) -> None:
    host.redirect = "http://127.0.0.2:9/.well-known/openwop"
    result = run(write(tmp_path, bundle()), "--discovery", host.url)
    assert result.exit_code == 2, result.output
    assert "another origin" in result.output
    assert len(host.requests) == 1


def test_the_reference_bundle_against_its_published_key(tmp_path: Path, host: Discovery) -> None:
    host.document = json.loads(REFERENCE.read_text())["discovery"]["document"]
    out = tmp_path / "r.json"
    result = run(REFERENCE, "--discovery", host.url, "--json", out)
    assert result.exit_code == 0, result.output
    assert "none (no openwop.requirement.0246.* row)" in result.output
    assert json.loads(out.read_text())["certifiedProfiles"] == [
        "openwop-discovery-core",
        "openwop-core-standard",
        "openwop-conformance-seams-v2",
    ]


def test_hostile_text_is_printed_escaped(tmp_path: Path, pem: Path) -> None:
    b = bundle()
    b["host"]["name"] = "\x1b[2J\x1b]0;owned\x07[bold red]EVIL[/bold red]\u202e"
    b["results"]["requirements"][3]["detail"] = "\x1b[31mred\x1b[0m"
    result = run(write(tmp_path, seal(b)), "--host-key", pem)
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output
    assert "\x07" not in result.output
    assert "\u202e" not in result.output
    assert "\\u001b[2J" in result.output
    assert "[bold red]EVIL[/bold red]" in result.output


def test_json_to_stdout(tmp_path: Path, pem: Path) -> None:
    result = run(write(tmp_path, bundle()), "--host-key", pem, "--json", "-")
    data = json.loads(result.output)
    assert data["verdict"] == "verified"
    assert data["exitCode"] == 0 == result.exit_code
    assert data["rejections"] == []
    assert data["keySource"] == "pem"


def test_a_pem_does_not_stand_in_for_unread_live_discovery(tmp_path: Path, pem: Path) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    result = run(write(tmp_path, bundle()), "--host-key", pem, "--discovery", url, "--json", "-")
    assert result.exit_code == 2
    data = json.loads(result.output)
    assert data["signatureVerified"] is True
    assert data["keySource"] == "pem"
    assert data["gaps"][0].startswith("the live discovery document was not read")


def test_fetch_bounds_and_closed_key_entries() -> None:
    import httpx

    from openwop_eval.conformance.verifier import MAX_DISCOVERY_BYTES, fetch_discovery

    def serve(body: bytes, status: int = 200) -> httpx.MockTransport:
        return httpx.MockTransport(lambda request: httpx.Response(status, content=body))

    big = fetch_discovery("http://h.test", transport=serve(b" " * (MAX_DISCOVERY_BYTES + 1)))
    assert big.keys is None
    assert "over" in str(big.error)
    assert (
        fetch_discovery("http://h.test", transport=serve(b"{}", 404)).error == "answered HTTP 404"
    )
    dup = fetch_discovery("http://h.test", transport=serve(b'{"a": 1, "a": 2}'))
    assert "not I-JSON" in str(dup.error)
    entries = [
        {"keyId": KEY_ID, "alg": "ed25519", "publicKey": PUBLIC_RAW, "use": "certification-bundle"},
        {"keyId": "x", "alg": "rsa", "publicKey": PUBLIC_RAW},
        {"keyId": "y", "alg": "ed25519", "publicKey": PUBLIC_RAW, "extra": 1},
        "not an entry",
    ]
    listed = fetch_discovery(
        "http://h.test", transport=serve(json.dumps({"signingKeys": entries}).encode())
    )
    assert [k.key_id for k in listed.keys or ()] == [KEY_ID]
    assert len(listed.notes) == 3

    seen: list[str] = []

    def moved(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        if request.url.path.startswith("/old"):
            return httpx.Response(302, headers={"location": "/new/.well-known/openwop"})
        return httpx.Response(200, json={"signingKeys": []})

    followed = fetch_discovery("http://h.test/old", transport=httpx.MockTransport(moved))
    assert (followed.keys, followed.error) == ((), None)  # read: it publishes no key
    assert seen == ["/old/.well-known/openwop", "/new/.well-known/openwop"]
