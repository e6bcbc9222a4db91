"""The host app under uvicorn, as `serve` runs it, in a thread of this process on a loopback
port the kernel picks (so no other process's host can hold it)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import uvicorn
from starlette.applications import Starlette

from tests.server.inprocess import ANSWER_S


@contextlib.contextmanager
def serving(app: Starlette) -> Iterator[str]:
    """Serve ``app`` (its lifespan too) until the block ends; its base URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        server = uvicorn.Server(uvicorn.Config(app, log_level="critical"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + ANSWER_S
        while not server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            assert thread.is_alive(), "uvicorn exited"
            time.sleep(0.01)  # waiting for the server to listen, not timing it
        try:
            yield f"http://127.0.0.1:{sock.getsockname()[1]}"
        finally:
            server.should_exit = True
            thread.join(ANSWER_S)
