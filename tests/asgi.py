"""A synchronous httpx client onto an ASGI app in this process (no server, no socket).

httpx's own ``ASGITransport`` is asynchronous only, and it answers once the app has sent the
whole body. This transport is synchronous, and it hands the body on as the app sends it: a
Server-Sent Events stream can be read in part and dropped, as a client on a socket would
drop it — closing the response early tells the app ``http.disconnect``. Code under test
that speaks through a plain ``httpx.Client`` (the conformance harness) is given it too.

Every request runs on one event loop: the transport's own, or the ``runner`` it is given, so
that an app, its lifespan and the tasks it starts (eval runs) all live on one loop. The app
runs only while a request is sent or its body read; each of those steps must make progress
within ``timeout`` seconds, else it fails with ``httpx.ReadTimeout`` (nothing hangs).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import httpx

T = TypeVar("T")
Message = dict[str, Any]


class _Exchange:
    """One request to the app, its response as the app sends it, and the client's drop."""

    def __init__(self, app: Any, request: httpx.Request, strict: bool) -> None:
        self.app, self.request, self.strict = app, request, strict
        self.status = 500
        self.headers: list[tuple[bytes, bytes]] = []
        self.error: Exception | None = None
        self.done = False  # the app sent its last body message, or ended
        self._read = False

    def _scope(self) -> Message:
        url = self.request.url
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},  # as uvicorn serves the app
            "http_version": "1.1",
            "method": self.request.method,
            "headers": [(k.lower(), v) for k, v in self.request.headers.raw],
            "scheme": url.scheme,
            "path": url.path,
            "raw_path": url.raw_path.split(b"?")[0],
            "query_string": url.query,
            "server": (url.host, url.port),
            "client": ("127.0.0.1", 123),
            "root_path": "",
        }

    async def start(self) -> None:
        """Send the request; return once the response has started (or the app ended)."""
        self._body = self.request.read()
        self._started, self._gone = asyncio.Event(), asyncio.Event()
        self._chunks: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.task = asyncio.create_task(self._serve())
        await self._started.wait()
        if self.error is not None and self.strict and not self.headers:
            raise self.error

    async def _serve(self) -> None:
        try:
            await self.app(self._scope(), self._receive, self._send)
        except Exception as exc:
            self.error = exc
        finally:
            self._end()
            self._started.set()

    async def _receive(self) -> Message:
        if not self._read:
            self._read = True
            return {"type": "http.request", "body": self._body, "more_body": False}
        await self._gone.wait()  # the client dropped, or the response is complete
        return {"type": "http.disconnect"}

    async def _send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status, self.headers = message["status"], list(message.get("headers", []))
            self._started.set()
        elif message["type"] == "http.response.body" and not self.done:
            body = message.get("body", b"")
            if body and self.request.method != "HEAD":
                self._chunks.put_nowait(body)
            if not message.get("more_body", False):
                self._end()

    def _end(self) -> None:
        if not self.done:
            self.done = True
            self._chunks.put_nowait(None)
            self._gone.set()

    async def next_chunk(self) -> bytes | None:
        return await self._chunks.get()

    async def drop(self) -> None:
        """The client goes away: the app is told so, and is waited for to finish."""
        self._gone.set()
        with contextlib.suppress(Exception):
            await self.task

    def check(self) -> None:
        """Strict: an exception that escaped the app fails the read, even mid-stream."""
        if self.error is not None and self.strict:
            raise self.error


class _Body(httpx.SyncByteStream):
    def __init__(self, transport: SyncASGITransport, exchange: _Exchange) -> None:
        self.transport, self.exchange = transport, exchange

    def __iter__(self) -> Iterator[bytes]:
        while (chunk := self.transport.run(self.exchange.next_chunk(), self.exchange)) is not None:
            yield chunk
        self.exchange.check()

    def close(self) -> None:
        self.transport.run(self.exchange.drop(), self.exchange)


class SyncASGITransport(httpx.BaseTransport):
    def __init__(
        self,
        app: Any,
        runner: asyncio.Runner | None = None,
        *,
        timeout: float = 30.0,
        raise_app_exceptions: bool = True,
    ) -> None:
        self.app = app
        self._runner = runner or asyncio.Runner()
        self._owns_runner = runner is None
        self.timeout = timeout
        self.raise_app_exceptions = raise_app_exceptions

    def run(self, step: Coroutine[Any, Any, T], exchange: _Exchange) -> T:
        try:
            return self._runner.run(asyncio.wait_for(step, self.timeout))
        except TimeoutError:
            raise httpx.ReadTimeout(
                f"the app sent nothing for {self.timeout:g} s", request=exchange.request
            ) from None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        exchange = _Exchange(self.app, request, self.raise_app_exceptions)
        self.run(exchange.start(), exchange)
        return httpx.Response(
            exchange.status, headers=exchange.headers, stream=_Body(self, exchange)
        )

    def close(self) -> None:
        if self._owns_runner:
            self._runner.close()


class Lifespan:
    """An app's lifespan, driven over ASGI as a server drives it (through its middleware):
    ``startup`` returns once the app has started, ``shutdown`` once it has stopped."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def _step(self, message: str) -> None:
        await self._inbox.put({"type": message})
        answer = asyncio.ensure_future(self._outbox.get())
        await asyncio.wait([answer, self._task], return_when=asyncio.FIRST_COMPLETED)
        if not answer.done():  # the app ended without answering: its exception, if any
            answer.cancel()
            self._task.result()
            raise RuntimeError(f"the app ended its lifespan without answering {message}")
        reply = answer.result()
        if reply["type"] != f"{message}.complete":
            raise RuntimeError(f"{message} failed: {reply.get('message', '')}")

    async def startup(self) -> None:
        self._inbox: asyncio.Queue[Message] = asyncio.Queue()
        self._outbox: asyncio.Queue[Message] = asyncio.Queue()
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": {}}
        self._task = asyncio.create_task(self.app(scope, self._inbox.get, self._outbox.put))
        await self._step("lifespan.startup")

    async def shutdown(self) -> None:
        await self._step("lifespan.shutdown")
        await self._task


def client(
    app: Any,
    base_url: str = "http://app",
    *,
    runner: asyncio.Runner | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> httpx.Client:
    transport = SyncASGITransport(app, runner, timeout=timeout)
    return httpx.Client(transport=transport, base_url=base_url, headers=headers)
