"""A 500 keeps the client's keep-alive connection usable, over uvicorn on loopback as `serve`
runs the app: the exception is answered with the content-free envelope, not re-raised to the
server, which would drop the connection unannounced and reset the client's next request."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openwop_eval.protocol.ids import project
from openwop_eval.server import create_app
from openwop_eval.store import Store
from tests.server.inprocess import ANSWER_S, host_config
from tests.server.served import serving

RUN = project("acme/" + "0" * 24)


@pytest.fixture
def failing_host(tmp_path: Path) -> Iterator[int]:
    """The app under uvicorn on loopback, its store failing every run read; the port."""
    database = f"sqlite:///{tmp_path / 'host.sqlite'}"
    store = Store(database)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("secret detail from deep inside")

    store.get_run = broken  # type: ignore[method-assign]
    try:
        with serving(create_app(host_config(database), store)) as url:
            yield int(url.rsplit(":", 1)[1])
    finally:
        store.close()


def exchange(
    conn: socket.socket, path: str, method: str = "GET", body: bytes = b""
) -> tuple[int, dict[str, str], bytes]:
    """Send one keep-alive request on ``conn`` and read its whole response."""
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: host\r\nAuthorization: Bearer acme-key\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    conn.sendall(head.encode() + body)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        assert chunk, f"the connection was closed before an answer to {path}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    while len(body) < int(headers["content-length"]):
        chunk = conn.recv(65536)
        assert chunk, "the connection was closed mid-body"
        body += chunk
    return int(status_line.split()[1]), headers, body


def test_after_a_500_the_connection_serves_the_next_request(failing_host: int) -> None:
    with socket.create_connection(("127.0.0.1", failing_host), timeout=ANSWER_S) as conn:
        status, headers, body = exchange(conn, f"/runs/{RUN}")
        assert status == 500
        assert body == b'{"error":"internal_error","message":"the host failed to answer"}'
        assert headers["openwop-version"] == "2.0"
        if headers.get("connection", "").lower() != "close":  # else it must not be reused
            status, _, _ = exchange(conn, "/.well-known/openwop")
            assert status == 200
            status, _, _ = exchange(conn, f"/runs/{RUN}")
            assert status == 500


def test_after_a_500_before_the_body_was_read_the_connection_serves_the_next_request(
    failing_host: int,
) -> None:
    """The cancel route fails on the run read, before it reads the body: the unread body
    must not be taken for the next request."""
    body = b'{"reason": "' + b"x" * 50_000 + b'"}'
    with socket.create_connection(("127.0.0.1", failing_host), timeout=ANSWER_S) as conn:
        status, headers, _ = exchange(conn, f"/runs/{RUN}/cancel", "POST", body)
        assert status == 500
        if headers.get("connection", "").lower() != "close":
            status, _, answer = exchange(conn, "/.well-known/openwop")
            assert status == 200, answer
