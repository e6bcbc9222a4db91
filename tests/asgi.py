"""A synchronous httpx client onto an ASGI app in this process (no server, no socket).

httpx's own ``ASGITransport`` is asynchronous only; code under test that speaks through a
plain ``httpx.Client`` (the conformance harness) is given this transport instead. Every
request runs on one private event loop, so the app's state lives on one loop.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx


class SyncASGITransport(httpx.BaseTransport):
    def __init__(self, app: Any) -> None:
        self._transport = httpx.ASGITransport(app=app)
        self._runner = asyncio.Runner()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        async def send() -> httpx.Response:
            response = await self._transport.handle_async_request(request)
            body = await response.aread()
            return httpx.Response(response.status_code, headers=response.headers, content=body)

        return self._runner.run(send())

    def close(self) -> None:
        self._runner.close()


def client(app: Any, base_url: str = "http://app") -> httpx.Client:
    return httpx.Client(transport=SyncASGITransport(app), base_url=base_url)
