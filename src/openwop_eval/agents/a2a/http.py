"""The HTTP client of an ``a2a:URL`` agent: every response read within
:data:`~openwop_eval.base.limits.MAX_A2A_RESPONSE_BYTES` (httpx is imported with this module,
when a trial first talks to the agent)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

import httpx

from ...base.limits import MAX_A2A_RESPONSE_BYTES

CONNECT_TIMEOUT_S = 10.0
"""Seconds to connect to the agent."""
READ_TIMEOUT_S = 120.0
"""Seconds a request may wait for the agent's next bytes (a stream's next event); the
trial's own ``--timeout`` bounds the whole task."""


class ResponseTooLargeError(httpx.ReadError):
    """A response went past :data:`MAX_A2A_RESPONSE_BYTES`: reading stopped there."""


def bounded_client(headers: Mapping[str, str]) -> httpx.AsyncClient:
    """An httpx client with ``headers`` on every request, each response read within the
    limit, no redirects followed (a card elsewhere is not the agent's)."""
    timeout = httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
    transport = _BoundedTransport(httpx.AsyncHTTPTransport(), MAX_A2A_RESPONSE_BYTES)
    return httpx.AsyncClient(headers=dict(headers), timeout=timeout, transport=transport)


class _BoundedTransport(httpx.AsyncBaseTransport):
    """``inner``, with each response's body cut off (an error) past ``limit`` bytes."""

    def __init__(self, inner: httpx.AsyncBaseTransport, limit: int) -> None:
        self._inner, self._limit = inner, limit

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        stream = response.stream
        if not isinstance(stream, httpx.AsyncByteStream):  # an async transport's never is
            return response
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_BoundedStream(stream, self._limit, request),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _BoundedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, limit: int, request: httpx.Request) -> None:
        self._inner, self._limit, self._request = inner, limit, request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = 0
        async for chunk in self._inner:
            read += len(chunk)
            if read > self._limit:
                raise ResponseTooLargeError(
                    f"the response of {self._request.url} went past {self._limit} bytes",
                    request=self._request,
                )
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()
